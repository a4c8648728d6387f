"""The smoke run's checks, on plugin counts, traces and /metrics figures built by hand: a run
that did what vLLM should passes every check; each kind of breakage fails its own check.
`run-real --smoke` wires them in: trace mode, dummy weights, the shipped model, smoke.json."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtpsim.records import RunExtra
from mtpsim.result import PHASES, Result
from mtpsim.trace import Trace
from mtpsim.trace_records import TraceRequest, TraceStep
from mtpsim.vllm_runner.smoke import check_policy

K = 3


def _trace(policy: str, reqs: int = 4, accepted: int = 1) -> Trace:
    steps = []
    for s in range(5):
        rs = [TraceRequest(id=f"r{i}", context_len=2560 + s * 2, drafted=K,
                           accepted=[int(j < accepted) for j in range(K)],
                           overlap=[0.9, 0.8] if policy == "share" else [])
              for i in range(reqs)]
        steps.append(TraceStep(step=s + 1, time_s=float(s), num_reqs=reqs, num_prefills=0,
                               phases=dict.fromkeys(PHASES, 0.0), shadow_s=0.0,
                               mtp_indexer_calls=[], requests=rs))
    return Trace(engine="vllm", policy=policy, num_speculative_tokens=K, index_topk=2048,
                 steps=steps)


def _result(policy: str, *, drafts: int = 20, accepted: int = 20, **counts) -> Result:
    rounds = 6
    c = {"policy": policy, "share_flag": policy == "share", "hooked_layers": 1,
         "compaction_rows_checked": 24 if policy == "share" else 0, "compaction_rows_wrong": 0,
         "contexts": {"propose": {"forwards": [rounds] * K,
                                  "indexer": [rounds] * K if policy == "fresh"
                                  else [rounds] + [0] * (K - 1)}}}
    c["device"] = {"served": c["contexts"]["propose"]}
    c.update(counts)
    return Result(mode="vllm", policy=policy, extra=RunExtra(plugin_counts=c),
                  metrics={"output_throughput": 50.0, "spec_decode_acceptance_length": 2.0,
                           "spec_decode_num_drafts": drafts,
                           "spec_decode_draft_tokens": drafts * K,
                           "spec_decode_accepted_tokens": accepted})


def _status(checks) -> dict[str, bool]:
    return {c.name: c.ok for c in checks}


@pytest.mark.parametrize("policy", ["fresh", "share"])
def test_a_run_that_did_what_vllm_should_passes(policy):
    checks = check_policy(policy, _result(policy), _trace(policy), K)
    assert all(c.ok for c in checks), [c for c in checks if not c.ok]
    want = {"plugin engaged", "indexer calls per draft step", "device counts = hook counts",
            "trace rows complete",
            "trace = /metrics"} | ({"compaction ran"} if policy == "share" else set())
    assert set(_status(checks)) == want
    per_step = next(c for c in checks if c.name == "indexer calls per draft step")
    want_idx = "6/6, 6/6, 6/6" if policy == "fresh" else "6/6, 0/6, 0/6"
    assert per_step.detail.startswith(f"per step indexer/forwards: {want_idx} (")


def test_sharing_that_did_not_skip_the_indexer_fails():
    r = _result("share", contexts={"propose": {"forwards": [6, 6, 6], "indexer": [6, 6, 6]}})
    assert _status(check_policy("share", r, _trace("share"), K)) == {
        "plugin engaged": True, "indexer calls per draft step": False,
        "device counts = hook counts": False, "compaction ran": True,
        "trace rows complete": True, "trace = /metrics": True}


def test_a_plugin_that_never_loaded_fails_at_once():
    r = Result(mode="vllm", policy="fresh", metrics={})
    assert _status(check_policy("fresh", r, _trace("fresh"), K)) == {"plugin engaged": False}


def test_the_wrong_share_flag_or_no_hooked_layer_is_not_engaged():
    assert not _status(check_policy("fresh", _result("fresh", share_flag=True),
                                    _trace("fresh"), K))["plugin engaged"]
    assert not _status(check_policy("share", _result("share", hooked_layers=0),
                                    _trace("share"), K))["plugin engaged"]


def test_wrong_compaction_rows_fail():
    r = _result("share", compaction_rows_wrong=3)
    assert not _status(check_policy("share", r, _trace("share"), K))["compaction ran"]


def test_a_truncated_or_empty_trace_is_not_complete():
    t = _trace("share")
    t.meta.truncated = ["process 7 was killed"]
    assert not _status(check_policy("share", _result("share"), t, K))["trace rows complete"]
    empty = Trace(engine="vllm", policy="share", num_speculative_tokens=K, index_topk=2048)
    assert not _status(check_policy("share", _result("share"), empty, K))["trace rows complete"]


def test_trace_and_metrics_that_disagree_fail_with_both_numbers():
    checks = check_policy("fresh", _result("fresh", drafts=21), _trace("fresh"), K)
    bad = next(c for c in checks if c.name == "trace = /metrics")
    assert not bad.ok
    assert "trace 20, 60, 20; /metrics 21, 63, 20" in bad.detail


def test_run_real_smoke_runs_both_policies_in_trace_mode_on_the_shipped_model(tmp_path,
                                                                             monkeypatch):
    import mtpsim.vllm_runner.runner as runner_mod
    from mtpsim.cli import app

    seen = []

    def fake(exp, policy, progress=None, *, run):
        seen.append((policy, run.trace, run.smoke, exp.engine.tp, exp.model.name))
        return _result(policy), _trace(policy)

    monkeypatch.setattr(runner_mod, "run_served_policy", fake)
    out = tmp_path / "smoke"
    res = CliRunner().invoke(app, ["run-real", "experiments/pr47352.toml", "--engine", "vllm",
                                   "--smoke", "--out", str(out)])
    assert res.exit_code == 0, res.output
    model = str((out / "smoke-model").absolute())
    assert seen == [("fresh", True, True, 1, model), ("share", True, True, 1, model)]
    assert json.loads((out / "smoke-model" / "config.json").read_text())["model_type"] == \
        "deepseek_v32"
    assert (out / "smoke-model" / "tokenizer.json").is_file()
    report = json.loads((out / "smoke.json").read_text())
    assert report["ok"] is True and len(report["checks"]) == 11
    assert "acceptance and speed mean nothing" in " ".join(res.output.split())


def test_a_failed_smoke_check_exits_1(tmp_path, monkeypatch):
    import mtpsim.vllm_runner.runner as runner_mod
    from mtpsim.cli import app

    monkeypatch.setattr(runner_mod, "run_served_policy",
                        lambda exp, policy, progress=None, *, run: (_result(policy, drafts=1),
                                                                    _trace(policy)))
    res = CliRunner().invoke(app, ["run-real", "experiments/pr47352.toml", "--engine", "vllm",
                                   "--smoke", "--out", str(tmp_path / "s")])
    assert res.exit_code == 1
    assert json.loads((tmp_path / "s" / "smoke.json").read_text())["ok"] is False


def test_smoke_is_for_the_vllm_engine_only(tmp_path):
    from mtpsim.cli import app

    res = CliRunner().invoke(app, ["run-real", "experiments/reference-cpu.toml", "--smoke",
                                   "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "--smoke: applies to --engine vllm" in res.output


def test_device_counts_that_disagree_with_the_hooks_or_are_missing_fail():
    r = _result("share")
    r.extra.plugin_counts["device"] = {"served": {"forwards": [6, 6, 6], "indexer": [6, 6, 6]}}
    bad = next(c for c in check_policy("share", r, _trace("share"), K)
               if c.name == "device counts = hook counts")
    assert not bad.ok and "device [6, 6, 6]/[6, 6, 6], hooks [6, 6, 6]/[6, 0, 0]" in bad.detail
    r.extra.plugin_counts["device"] = None
    assert not _status(check_policy("share", r, _trace("share"), K))["device counts = hook counts"]
