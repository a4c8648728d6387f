"""The plugin's device counts: an in-place `index_add_` on a registered buffer inside the MTP
attention's and the indexer's patched forwards. Compiled on the CPU (torch.compile with a
backend that keeps the FX graph), the op is part of the captured graph, and replaying that graph
(no Python of the modules runs, as in a CUDA-graph replay) keeps counting at the draft step
vLLM's `current_draft_step` holds, while the eager hooks see nothing. Around vLLM 0.33.0's real
MTPSpeculator the device counts equal the hook counts (the trace-mode cross-check), go to
start-up while a dummy run proposes, reach the counts file at flush and exit, and decide the
verdict when hooks are traced away."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from _vllm_fakes import FakeDraftModel, installed, load, make_speculator, propose

from mtpsim.vllm_plugin.counts import read_counts, sharing_verdict
from mtpsim.vllm_plugin.device_counts import DeviceCounts
from mtpsim.vllm_plugin.settings import PluginSettings

K = 3


class Indexer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wq_b = torch.nn.Linear(4, 4)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.wq_b(h)


class SparseAttention(torch.nn.Module):
    def __init__(self, skip_topk: bool) -> None:
        super().__init__()
        self.skip_topk = skip_topk
        self.indexer = Indexer()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if not self.skip_topk:
            h = h + self.indexer(h)
        return h * 2


class Draft(torch.nn.Module):
    def __init__(self, skip_topk: bool) -> None:
        super().__init__()
        self.attn = SparseAttention(skip_topk)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.attn(h) + 1


def _compiled(skip_topk: bool):
    step = torch.tensor(0, dtype=torch.int64)
    draft = Draft(skip_topk)
    counts = DeviceCounts(K, step)
    counts.attach(draft.attn, draft.attn.indexer.wq_b)
    counts.set_context(served=True)
    graphs: list[tuple[torch.fx.GraphModule, list]] = []

    def keep(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append((gm, example_inputs))
        return gm.forward

    fn = torch.compile(draft, backend=keep, fullgraph=True)
    with torch.no_grad():
        fn(torch.ones(2, 4))
    torch._dynamo.reset()
    return counts, step, graphs


@pytest.mark.parametrize("skip_topk", [False, True])
def test_the_counting_op_is_part_of_the_compiled_forward_and_counts_on_replay(skip_topk):
    counts, step, graphs = _compiled(skip_topk)
    assert len(graphs) == 1  # fullgraph: one graph, the op inside it
    gm, inputs = graphs[0]
    adds = [n for n in gm.graph.nodes if "index_add" in str(n.target)]
    assert len(adds) == (1 if skip_topk else 2)  # forwards, and the indexer when it runs
    assert counts.read()["served"] == {"forwards": [1, 0, 0],
                                       "indexer": [0 if skip_topk else 1, 0, 0]}
    # Replay the captured graph only: no module Python runs, as in a CUDA-graph replay.
    with torch.no_grad():
        for s in (1, 2, 2, 1):
            step.fill_(s)
            gm(*inputs)
    want_idx = [0, 0, 0] if skip_topk else [1, 2, 2]
    assert counts.read()["served"] == {"forwards": [1, 2, 2], "indexer": want_idx}
    counts.set_context(served=False)
    gm(*inputs)
    assert counts.read()["startup"]["forwards"] == [0, 1, 0]


def test_a_python_counter_in_a_hook_misses_every_replay():
    draft = Draft(False)
    calls = []
    draft.attn.register_forward_pre_hook(lambda m, a: calls.append(1))
    graphs = []
    fn = torch.compile(draft, backend=lambda gm, ex: graphs.append((gm, ex)) or gm.forward,
                       fullgraph=True)
    with torch.no_grad():
        fn(torch.ones(2, 4))
        gm, inputs = graphs[0]
        for _ in range(3):
            gm(*inputs)
    torch._dynamo.reset()
    assert len(calls) <= 1  # traced once (or not at all), never on a replay


MTPSpeculator = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator").MTPSpeculator


def _enter_propose(spec, *, dummy_run: bool, req_ids: tuple[str, ...] = ("r1",)) -> None:
    """Call the patched MTPSpeculator.propose: the plugin's wrapper picks the device context,
    then vLLM's own propose fails on the empty arguments (no GPU state here)."""
    batch = SimpleNamespace(num_reqs=len(req_ids), req_ids=list(req_ids),
                            num_draft_tokens_per_req=None)
    with pytest.raises(Exception):  # noqa: B017 - vLLM's body cannot run on these arguments
        spec.propose(batch, None, None, None, None, None, None, None, None, None, None,
                     dummy_run=dummy_run)


@pytest.mark.parametrize("attention", ["generic", "cuda-fused"])
@pytest.mark.parametrize("policy", ["fresh", "share"])
def test_device_counts_equal_the_hook_counts_around_vllms_speculator(policy, attention,
                                                                     tmp_path, monkeypatch):
    with installed(PluginSettings(policy, tmp_path, trace=True)) as rec:
        spec = make_speculator(MTPSpeculator, k=K)
        draft = load(spec, monkeypatch, FakeDraftModel(attention=attention))
        _enter_propose(spec, dummy_run=False)
        for drafts in (True, True, True, False):  # the last step drafts nothing
            propose(spec, draft, [40, 90], drafts=drafts)
        rec.close()  # the exit flush reads the device counts
    (written,) = read_counts(tmp_path)
    hooks, device = written.contexts["propose"], written.device["served"]
    assert hooks.forwards == [4, 3, 3] and device.forwards == hooks.forwards
    assert device.indexer == hooks.indexer == ([4, 3, 3] if policy == "fresh" else [4, 0, 0])
    assert sum(hooks.shadow) == (6 if policy == "share" else 0)  # shadow runs are not counted
    assert written.device["startup"].forwards == [0, 0, 0]
    verdict = sharing_verdict(written)
    assert verdict.engaged is (policy == "share") and verdict.context == "device"
    assert "CUDA-graph replays included" in verdict.line()


def test_a_dummy_propose_counts_as_start_up_on_the_device(tmp_path, monkeypatch):
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=K)
        draft = load(spec, monkeypatch, FakeDraftModel())
        propose(spec, draft, [40])  # before any propose: start-up (the profiling run)
        _enter_propose(spec, dummy_run=True)
        propose(spec, draft, [40])
        _enter_propose(spec, dummy_run=False, req_ids=("_v2_mixed_warmup_0",))  # vLLM's warm-up
        propose(spec, draft, [40])
        _enter_propose(spec, dummy_run=False)
        propose(spec, draft, [40])
        rec.flush()
    data = json.loads(next(tmp_path.glob("vllm-counts-*.json")).read_text())
    assert data["device"]["startup"] == {"forwards": [3, 3, 3], "indexer": [3, 0, 0]}
    assert data["device"]["served"] == {"forwards": [1, 1, 1], "indexer": [1, 0, 0]}


def test_device_counts_decide_the_verdict_when_hooks_are_traced(tmp_path, monkeypatch):
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=K)
        draft = load(spec, monkeypatch, FakeDraftModel())
        rec.counts.hooks_traced = True  # as for a compiled draft model: hooks say nothing
        _enter_propose(spec, dummy_run=False)
        for _ in range(2):
            propose(spec, draft, [40, 90])
        rec.flush()
    (written,) = read_counts(tmp_path)
    assert written.device["served"].indexer == [2, 0, 0]
    assert sharing_verdict(written).engaged is True


def test_the_runner_reads_the_process_with_device_counts(tmp_path):
    from mtpsim.result import Result
    from mtpsim.spec import load_experiment
    from mtpsim.trace import Trace
    from mtpsim.vllm_plugin.counts import PluginCounts, StepCounts
    from mtpsim.vllm_runner.runner import _vllm_plugin_outputs

    api = PluginCounts(policy="share", pid=1, final=True)  # a process without the draft model
    worker = PluginCounts(policy="share", pid=2, final=True, hooked_layers=1, hooks_traced=True,
                          device={"served": StepCounts([9, 7, 7], [9, 0, 0], [0, 0, 0]),
                                  "startup": StepCounts([1, 1, 1], [1, 0, 0], [0, 0, 0])})
    for c in (api, worker):
        (tmp_path / f"vllm-counts-{c.pid}.json").write_text(json.dumps(c.to_json()))
    exp = load_experiment("experiments/smoke-h200.toml", [])
    result = Result(mode="vllm", policy="share", metrics={})
    _vllm_plugin_outputs(exp, "share", tmp_path, result, Trace("vllm", "share", 3, 2048), False)
    assert result.extra.sharing_engaged.startswith("sharing engaged: yes (device")
    assert result.extra.plugin_counts["pid"] == 2
