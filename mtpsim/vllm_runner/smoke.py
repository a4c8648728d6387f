"""`run-real --engine vllm --smoke`: first contact with a GPU node in minutes, no download.

vLLM serves a shrunken DeepSeek-V3.2 (`smoke_model/config.json`, shipped: the real model type,
DSA indexer with index_topk 2048, one MTP layer; 3 layers, 32 experts, hidden 1024, a 256-entry
byte vocabulary) with `--load-format dummy` (random weights) on one GPU, in trace mode, for a
handful of requests under `fresh` and `share`. The checks below answer what the first hour
needs to know: did the plugin engage, did sharing skip the indexer, did compaction run, are the
traces complete, do the trace and `/metrics` agree. Acceptance from random weights means
nothing; the report says so.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import asdict
from pathlib import Path

from mtpsim.dataclass import dataclass
from mtpsim.result import Result
from mtpsim.trace import Trace

POLICIES = ("fresh", "share")
# Smoke settings, applied before the user's --set (which may still change the load); the same
# values as experiments/smoke-h200.toml. No flag of a bigger experiment comes along (-O3, extra
# arguments), and the server timeouts fit a 10-minute GPU window: start-up well under it, a
# stop grace that lets the workers run the plugin's exit flush.
OVERRIDES = ("engine.tp=1", "engine.max_num_seqs=8", "engine.max_num_batched_tokens=8192",
             "workload.num_prompts=8", "workload.input_len=2560", "workload.output_len=64",
             "workload.max_concurrency=4", "workload.request_rate=inf", "workload.num_warmups=0",
             'workload.dataset="random"', 'workload.backend="openai"',
             'workload.input_len_distribution="fixed"', 'workload.output_len_distribution="fixed"',
             "workload.ignore_eos=true", 'model.quantization="bf16"', "model.vocab_size=256",
             "vllm.extra_args=[]", "vllm.compilation_mode=0", "vllm.startup_timeout_s=240.0",
             "vllm.stop_timeout_s=45.0", f"policies={json.dumps(list(POLICIES))}")
# Settings `--smoke` owns in `vllm serve` (argparse destination -> why).
OWNED = {"load_format": "dummy weights, set by --smoke",
         "max_model_len": "sized by --smoke to the smoke workload"}
NOTE = ("smoke run: random (dummy) weights, so acceptance and speed mean nothing; it checks "
        "the plumbing (plugin, indexer calls per draft step, compaction, traces, counters)")


def overrides(model_dir: Path) -> list[str]:
    return [*OVERRIDES, f"model.name={json.dumps(str(model_dir))}"]


def serve_args(input_len: int, output_len: int, k: int) -> list[str]:
    """What `vllm serve` needs beyond the runner's usual flags."""
    need = input_len + output_len + k + 1
    return ["--load-format", "dummy", "--max-model-len", str(-(-need // 256) * 256)]


def prepare_model(folder: Path) -> Path:
    """The shipped config plus a byte-level tokenizer in `folder` (what `vllm serve` loads)."""
    from mtpsim.fileio import atomic_write_text
    from mtpsim.serve_reference.tokenizer import write_byte_tokenizer

    write_byte_tokenizer(folder)  # writes its own config.json, replaced next
    config = importlib.resources.files("mtpsim.vllm_runner").joinpath("smoke_model/config.json")
    atomic_write_text(folder / "config.json", config.read_text(encoding="utf-8"))
    return folder


@dataclass(frozen=True, slots=True)
class SmokeCheck:
    policy: str
    name: str
    ok: bool
    detail: str


def _counts(result: Result) -> dict | None:
    return result.extra.plugin_counts


def judge_steps(policy: str, forwards: list[int], indexer: list[int], k: int) -> tuple[bool, str]:
    """Each draft step on its own: `fresh` runs the MTP indexer on every forward of every
    step (indexer[i] == forwards[i]); `share` runs it on every step-0 forward and never at
    steps >= 1. Steps are not compared with each other: Model Runner V2 drafts nothing (K=0)
    in a step where every scheduled request finishes or is mid-chunk
    (vllm/v1/core/sched/scheduler.py `Scheduler._drafts_unused`, `skip_drafts`), yet
    `TargetDependentARSpeculator.propose` (v1/worker/gpu/spec_decode/target_dependent_ar/
    speculator.py) still runs the step-0 forward before it returns, so step 0 counts
    [R + z, R, R] for R draft rounds and z zero-draft steps."""
    per_step = ", ".join(f"{i}/{f}" for i, f in zip(indexer, forwards, strict=False))
    detail = f"per step indexer/forwards: {per_step or 'none'}"
    if len(forwards) != k or len(indexer) != k:
        return False, f"{detail} ({len(forwards)} step(s) recorded, expected {k})"
    if not forwards[0] or (k > 1 and not all(forwards[1:])):
        return False, f"{detail} (a step with no forward: no draft round was seen)"
    if any(f > forwards[0] for f in forwards[1:]):
        return False, f"{detail} (more forwards at a later step than at step 0)"
    want = list(forwards) if policy == "fresh" else [forwards[0]] + [0] * (k - 1)
    rule = ("indexer on every forward" if policy == "fresh"
            else "indexer on every step-0 forward, none at steps >= 1")
    if indexer != want:
        bad = [i for i, (got, w) in enumerate(zip(indexer, want, strict=True)) if got != w]
        return False, f"{detail} (expected {rule}; wrong at step {', '.join(map(str, bad))})"
    zero_draft = forwards[0] - (forwards[1] if k > 1 else 0)
    return True, f"{detail} ({rule}; {zero_draft} step-0 forward(s) without drafts)"


def check_policy(policy: str, result: Result, trace: Trace, k: int) -> list[SmokeCheck]:
    """The smoke checks for one policy's served run."""
    out: list[SmokeCheck] = []
    c = _counts(result)

    def add(name: str, ok: bool, detail: str) -> None:
        out.append(SmokeCheck(policy, name, ok, detail))

    if c is None:
        add("plugin engaged", False, "no counts from the plugin (entry point not loaded?)")
        return out
    layers, flag = c.get("hooked_layers"), c.get("share_flag")
    add("plugin engaged", bool(layers) and flag == (policy == "share"),
        f"{layers} MTP sparse-attention layer(s) hooked, share_mtp_topk_indices={flag}")
    steps = c.get("contexts", {}).get("propose", {})
    ok, detail = judge_steps(policy, list(steps.get("forwards", [])),
                             list(steps.get("indexer", [])), k)
    add("indexer calls per draft step", ok, detail)
    served = (c.get("device") or {}).get("served")
    if served is None:
        add("device counts = hook counts", False, "no device counts (the plugin found no "
            "current_draft_step on the speculator)")
    else:
        dev = (list(served.get("forwards", [])), list(served.get("indexer", [])))
        hooks = (list(steps.get("forwards", [])), list(steps.get("indexer", [])))
        add("device counts = hook counts", dev == hooks,
            f"forwards/indexer per step: device {dev[0]}/{dev[1]}, hooks {hooks[0]}/{hooks[1]}")
    if policy == "share":
        checked, wrong = c.get("compaction_rows_checked", 0), c.get("compaction_rows_wrong", 0)
        add("compaction ran", checked > 0 and wrong == 0, f"{wrong} wrong of {checked} rows")
    reqs = [r for s in trace.steps for r in s.requests]
    cut = trace.meta.truncated
    overlaps = [o for r in reqs for o in r.overlap]
    complete = (bool(reqs) and not cut and all(0 < r.drafted <= k for r in reqs)
                and all(0.0 <= o <= 1.0 for o in overlaps)
                and (policy == "fresh" or bool(overlaps)))
    add("trace rows complete", complete, f"{len(reqs)} verified drafts in {len(trace.steps)} "
        f"steps, {len(overlaps)} overlap values" + (f"; truncated: {cut}" if cut else ""))
    drafts, tokens = len(reqs), sum(r.drafted for r in reqs)
    accepted = sum(sum(r.accepted) for r in reqs)
    m = (result.get("spec_decode_num_drafts"), result.get("spec_decode_draft_tokens"),
         result.get("spec_decode_accepted_tokens"))
    add("trace = /metrics", tuple(m) == (drafts, tokens, accepted),
        f"drafts, draft tokens, accepted: trace {drafts}, {tokens}, {accepted}; "
        f"/metrics {m[0]}, {m[1]}, {m[2]}")
    return out


def write_report(checks: list[SmokeCheck], path: Path) -> None:
    from mtpsim.fileio import atomic_write_json

    atomic_write_json(path, {"note": NOTE, "ok": all(c.ok for c in checks),
                             "checks": [asdict(c) for c in checks]})
