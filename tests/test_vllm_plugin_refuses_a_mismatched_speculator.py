"""A vLLM whose MTP speculator hooks have another shape stops with a message naming the
installed vLLM version, before anything is patched."""

from __future__ import annotations

import pytest
import torch

mtp_mod = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator")

from mtpsim.vllm_plugin import register  # noqa: E402
from mtpsim.vllm_plugin.contract import (  # noqa: E402
    IncompatibleVllmError,
    check_speculator_shape,
    installed_vllm_version,
    load_speculator_classes,
)
from mtpsim.vllm_plugin.patch import STATE_ATTR  # noqa: E402

MTP = mtp_mod.MTPSpeculator


def test_the_installed_vllm_has_the_supported_shape():
    mtp, base = load_speculator_classes()
    assert mtp is MTP
    check_speculator_shape(mtp, base)
    assert installed_vllm_version() == "0.33.0"


def test_an_older_on_prefill_end_signature_is_refused_with_the_version(monkeypatch):
    def on_prefill_end(self, last_token_indices: torch.Tensor) -> None: ...

    monkeypatch.setattr(MTP, "on_prefill_end", on_prefill_end)
    monkeypatch.setenv("MTPSIM_POLICY", "share")
    with pytest.raises(IncompatibleVllmError) as e:
        register()
    msg = str(e.value)
    assert "vLLM 0.33.0 is installed" in msg
    assert "MTPSpeculator.on_prefill_end(self, last_token_indices" in msg
    assert "should be (self, num_reqs: int) -> None" in msg
    assert STATE_ATTR not in vars(MTP)


def test_a_speculator_without_the_share_flag_or_base_class_is_refused():
    class Base:
        def on_prefill_begin(self, num_reqs: int) -> None: ...

    class NotMTP:
        pass

    with pytest.raises(IncompatibleVllmError, match="does not subclass"):
        check_speculator_shape(NotMTP, Base, "9.9.9")

    _, base = load_speculator_classes()

    class NoFlag(base):  # type: ignore[misc, valid-type]
        def load_draft_model(self, target_model, names): ...
        def on_prefill_begin(self, num_reqs: int) -> None: ...
        def on_prefill_end(self, num_reqs: int) -> None: ...
        def on_multi_step_decode_begin(self, num_reqs: int) -> None: ...
        def on_multi_step_decode_end(self, num_reqs: int, extra: int) -> None: ...

    with pytest.raises(IncompatibleVllmError) as e:
        check_speculator_shape(NoFlag, base, "9.9.9")
    assert "vLLM 9.9.9 is installed" in str(e.value)
    assert "share_mtp_topk_indices" in str(e.value)
    assert "NoFlag.on_multi_step_decode_end(self, num_reqs" in str(e.value)
