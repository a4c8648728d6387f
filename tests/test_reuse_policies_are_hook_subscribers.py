"""The reuse policies act only through the four hooks, on a declared model Protocol checked once;
`mtpsim.policies` imports without torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mtpsim.errors import UserError
from mtpsim.policies import POLICIES, POLICY_CLASSES, SpeculatorHooks, check_model, make_policy


class FakeModel:
    def __init__(self):
        self.calls = []

    def set_skip_topk(self, skip):
        self.calls.append(("skip", skip))

    def compact_topk_indices(self, idx):
        self.calls.append(("compact", list(idx)))

    def set_append_recent(self, on):
        self.calls.append(("recent", on))

    def set_use_target_topk(self, on):
        self.calls.append(("target", on))


class State:
    last_token_indices = [3, 7, 9, 11]
    num_speculative_steps = 3


def one_propose(name):
    model = FakeModel()
    p = make_policy(name, model, State())
    p.on_prefill_begin(2)
    p.on_prefill_end(2)
    p.on_multi_step_decode_begin(2)
    p.on_multi_step_decode_end(2)
    return model.calls


def test_each_policy_calls_the_model_as_specified():
    assert one_propose("fresh") == []
    share = [("skip", False), ("compact", [3, 7]), ("skip", True), ("skip", False)]
    assert one_propose("share") == share
    assert one_propose("share_recent") == [("skip", False), ("compact", [3, 7]), ("skip", True),
                                           ("recent", True), ("skip", False), ("recent", False)]
    assert one_propose("target_share") == [("skip", False), ("target", True), ("compact", [3, 7]),
                                           ("target", False), ("skip", True), ("skip", False)]


def test_at_k1_no_policy_compacts_rows_no_later_step_reads():
    """vLLM 0.33.0's MTPSpeculator compacts step 0's rows only if num_speculative_steps > 1."""
    class OneStep(State):
        num_speculative_steps = 1

    for name in POLICIES:
        model = FakeModel()
        p = make_policy(name, model, OneStep())
        p.on_prefill_begin(2)
        p.on_prefill_end(2)
        assert not [c for c in model.calls if c[0] == "compact"], name


def test_every_named_policy_has_a_class_over_the_no_op_hooks():
    assert list(POLICY_CLASSES) == list(POLICIES)
    assert all(issubclass(c, SpeculatorHooks) for c in POLICY_CLASSES.values())


def test_model_protocol_is_checked_once_and_names_what_is_missing():
    with pytest.raises(TypeError, match="set_append_recent"):
        check_model(type("M", (), {"set_skip_topk": lambda s, x: None,
                                   "compact_topk_indices": lambda s, x: None,
                                   "set_use_target_topk": lambda s, x: None})())
    with pytest.raises(UserError, match="policy"):
        make_policy("bogus", FakeModel(), State())


def test_policies_module_does_not_import_torch():
    code = "import sys, mtpsim.policies, mtpsim.trace; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
