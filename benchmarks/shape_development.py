"""Development check (post hoc, on seen data: it tests nothing) of step-cost features that depend
on a batch's SHAPE, measured as v13 measures the workload shift (docs/uncertainty.md §15).

v13's calibration (docs/data/heldout-v13/calibrate: 4 workload kinds, 24 traces) gave a
leave-one-kind-out shift SD of 0.090 for decode-only steps (the kinds priced at 0.87 for the
Poisson mixed-length stream, 0.92, 0.94 and 1.01 for the equal-length bursts). Each candidate
below follows something the reference engine does (mtpsim/engine/model.py, engine.py); the
official measurement (`fit.measure_shift`) is rerun with the candidate's features or fitting
scope swapped in, and the fit on all four kinds replays the v13 and v12 test configurations' real
steps (measured / priced decode seconds; extra development data, also seen):

- `as_shipped`: mtpsim's features (reproduces the calibration file's 0.090).
- `padded_indexer`: the batched indexer scores every row over the batch's longest context
  (`n_keys = input_pos.max() + 1`), so decode and draft contexts count as requests x the longest
  (mtpsim.calibration.fit.padded_quantities: the fit option indexer_keys = "padded").
- `prompt_chunks`: a prompt is prefilled and draft-prefilled in chunks of PREFILL_ROW_KEYS //
  top-k rows, one model call each, and each chunk's indexer scores its rows over all keys up to
  the chunk's end; the features counted one draft call per prompt and causal pairs.
- `decode_scope`: the per-phase prices fitted on decode-only steps alone (the engine runs decode
  steps as one batched call per phase, where a prompt runs chunked calls of 256 rows: a
  shared linear price is pulled by the prompts' large seconds). Prices decode steps only: its
  prefill ratios are not a measurement (reported as null).

Also the stream kind's ratio by batch size (left out, as_shipped), where the shape effect shows.
Point fits, CPU seconds as traced (the slices' probe figures are 0.136-0.151 s for every kind).

    python benchmarks/shape_development.py [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import gzip
import json
import math
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import padded_indexer_development as padded  # noqa: E402  (trace reading)

import mtpsim.calibration.fit as fit  # noqa: E402
import mtpsim.models.cost as cost  # noqa: E402
import mtpsim.models.fitted as fitted  # noqa: E402  (its own binding of cost_features prices)
from mtpsim.calibration.shift import is_prefill, trace_kind  # noqa: E402
from mtpsim.engine.engine import PREFILL_ROW_KEYS  # noqa: E402
from mtpsim.fileio import atomic_write_json  # noqa: E402
from mtpsim.models.cost import StepShape  # noqa: E402
from mtpsim.models.fitted import FittedCost  # noqa: E402
from mtpsim.result import PHASES  # noqa: E402
from mtpsim.trace import Trace, read_trace  # noqa: E402

DATA = ROOT / "docs" / "data"
POLICIES = ("fresh", "share")


@dataclasses.dataclass(slots=True)
class ChunkedShape(StepShape):
    """StepShape plus the prompts' chunk calls and chunk-padded indexer pairs."""

    prefill_chunks: np.ndarray | float = 0.0
    prefill_chunk_pairs: np.ndarray | float = 0.0


def prompt_lengths(tr: Trace) -> dict[int, list[int]]:
    """Step -> the prompt lengths prefilled in it (as fit.step_quantities reconstructs them)."""
    first: dict[str, tuple[int, int]] = {}
    for j, st in enumerate(tr.steps):
        for r in st.requests:
            first.setdefault(r.id, (j, r.context_len - 1))
    out: dict[int, list[int]] = {}
    for j, plen in first.values():
        out.setdefault(j - 1, []).append(plen)
    return out


def chunk_work(prompt: int, chunk: int) -> tuple[int, int]:
    """A prompt's model calls and indexer query-key pairs as the engine prefills it: chunks of
    `chunk` rows, each scoring its rows against every key up to the chunk's end."""
    starts = range(0, prompt, chunk)
    return len(starts), sum(min(prompt, a + chunk) * (min(prompt, a + chunk) - a) for a in starts)


def chunked_quantities(tr: Trace) -> tuple[StepShape, np.ndarray]:
    q, gaps = _QUANTITIES(tr)
    chunk = max(1, PREFILL_ROW_KEYS // tr.index_topk)
    prompts = prompt_lengths(tr)
    calls, pairs = np.zeros(len(tr.steps)), np.zeros(len(tr.steps))
    for j, st in enumerate(tr.steps):
        for p in prompts.get(j, [])[:st.num_prefills]:
            c, n = chunk_work(p, chunk)
            calls[j] += c
            pairs[j] += n
    fields = {f.name: getattr(q, f.name) for f in dataclasses.fields(StepShape)}
    return ChunkedShape(**fields, prefill_chunks=calls, prefill_chunk_pairs=pairs), gaps


def chunked_features(x: StepShape, k: int, topk: int, stack=None) -> dict[str, dict[str, np.ndarray]]:
    f = _FEATURES(x, k, topk, stack)
    if isinstance(x, ChunkedShape):
        chunks = np.asarray(x.prefill_chunks, float)
        f["prefill"]["calls"] = chunks
        f["prefill"]["pairs"] = np.asarray(x.prefill_chunk_pairs, float)
        f["draft_prefill"]["calls"] = f["draft_prefill"]["calls"] - np.asarray(x.prefill_done, float) + chunks
    return f


_FEATURES = cost.cost_features
_QUANTITIES = fit.step_quantities
_NNLS = fit._nnls
_FIT_COST = fit.fit_cost


@contextlib.contextmanager
def candidate(name: str) -> Iterator[None]:
    """Swap the candidate's step quantities, features or fitting scope into the fit and the
    pricing (module globals), and restore them after."""
    saved = (fit.step_quantities, fit.cost_features, cost.cost_features, fitted.cost_features, fit._nnls,
             fit.fit_cost)
    try:
        if name == "padded_indexer":
            fit.step_quantities = fit.padded_quantities
        elif name == "prompt_chunks":
            fit.step_quantities = chunked_quantities
            fit.cost_features = cost.cost_features = fitted.cost_features = chunked_features
        elif name == "decode_scope":
            masks: list[np.ndarray] = []

            def fit_cost(traces):
                used = [tr for tr in traces if tr.policy in fit.POOLED and tr.steps]
                dec = [~is_prefill(_QUANTITIES(tr)[0].prefill_tokens) for tr in used]
                idx = [d for d, tr in zip(dec, used, strict=True) if fit.traits(tr.policy).runs_indexer(1)]
                masks[:] = [np.concatenate(dec), np.concatenate(idx) if idx else np.zeros(0, bool)]
                return _FIT_COST(traces)

            def nnls(A, y):
                m = next(m for m in masks if m.size == y.size)  # the phase's rows: all or fresh-only
                return _NNLS(A[m], y[m])

            fit.fit_cost, fit._nnls = fit_cost, nnls
        elif name != "as_shipped":
            raise ValueError(name)
        yield
    finally:
        (fit.step_quantities, fit.cost_features, cost.cost_features, fitted.cost_features, fit._nnls,
         fit.fit_cost) = saved


def decode_ratio(cal, traces: list[Trace], by_batch: bool = False) -> float | dict[int, float]:
    """Measured over priced phase seconds of the traces' decode-only steps (or by batch size)."""
    acc: dict[int, list[float]] = {}
    for tr in traces:
        q, _ = fit.step_quantities(tr)
        pr = FittedCost(cal, tr.policy, tr.num_speculative_tokens, tr.index_topk).priced(q)
        priced = np.broadcast_to(sum(pr[p] for p in PHASES) - cal.cost.gap_s, (len(tr.steps),))
        dec = ~is_prefill(q.prefill_tokens)
        for j, st in enumerate(tr.steps):
            if dec[j]:
                a = acc.setdefault(len(st.requests) if by_batch else 0, [0.0, 0.0])
                a[0] += sum(st.phases.values())
                a[1] += float(priced[j])
    out = {b: m / p for b, (m, p) in sorted(acc.items())}
    return out if by_batch else out[0]


def probe_figures(slice_dir: Path, policy: str) -> list[float]:
    """The CPU-second probe figures recorded around a slice's runs of one policy."""
    files = sorted(slice_dir.glob(f"rounds/r*/{policy}.json")) or [slice_dir / f"{policy}.json"]
    return [v["cpu_s"] for f in files for v in json.loads(f.read_text())["extra"]["probe"].values()
            if isinstance(v, dict) and "cpu_s" in v]


def probe_scaled(traces: list[Trace], figures: list[float]) -> list[Trace]:
    """Copies of the traces with every phase second scaled to the campaign's median probe figure."""
    ref = statistics.median(figures)
    out = []
    for tr, fig in zip(traces, figures, strict=True):
        t = copy.deepcopy(tr)
        for st in t.steps:
            for d in (st.phases, st.attention):
                for k in d:
                    d[k] *= ref / fig
        out.append(t)
    return out


@contextlib.contextmanager
def grouped(groups: dict[int, str]) -> Iterator[None]:
    """Leave out groups of traces (by id) instead of the experiment-file kinds."""
    saved = fit.trace_kind
    fit.trace_kind = lambda tr: groups[id(tr)]
    try:
        yield
    finally:
        fit.trace_kind = saved


def controls(cal_traces: list[Trace], slices: list[Path]) -> dict:
    """What the leave-one-kind-out SD holds besides batch shape: the in-sample decode level of each
    slice's runs (fresh and share run back to back on the same batches), the level spread of a
    kind's three slices (the bursts' batches are the same in all three), leave-one-time-block-out
    (each block of four consecutive slices holds all four kinds, so shape is balanced), and the
    probe normalisation of every run."""
    cal = fit.fit_traces(cal_traces)
    levels = {}
    for i, tr in enumerate(cal_traces):
        levels.setdefault(slices[i // len(POLICIES)].name, {})[tr.policy] = decode_ratio(cal, [tr])
    logs = {s: [math.log(v) for v in d.values()] for s, d in levels.items()}
    within_slice = math.sqrt(statistics.mean((a - b) ** 2 for a, b in logs.values()) / 2)
    by_kind: dict[str, list[float]] = {}
    for i, s in enumerate(slices):
        kind = trace_kind(cal_traces[len(POLICIES) * i])
        by_kind.setdefault(kind, []).append(statistics.mean(logs[s.name]))
    blocks = {id(tr): f"block{i // (4 * len(POLICIES))}" for i, tr in enumerate(cal_traces)}
    with grouped(blocks):
        ws = fit.measure_shift(cal, cal_traces)
    figures = [statistics.median(probe_figures(s, p)) for s in slices for p in POLICIES]
    scaled = probe_scaled(cal_traces, figures)
    ps = fit.fit_traces(scaled).workload_shift
    lv = [math.log(levels[s.name][p]) for s in slices for p in POLICIES]
    corr = float(np.corrcoef(lv, np.log(figures))[0, 1])
    return {"slice_decode_level": levels, "level_probe_log_corr": corr,
            "within_slice_policy_sd": within_slice,
            "within_kind_slice_sd": {k: statistics.stdev(v) for k, v in by_kind.items()},
            "leave_one_time_block_out": {"decode_sd": ws.decode_sd, "prefill_sd": ws.prefill_sd,
                                         "blocks": {k: v["decode"] for k, v in ws.kinds.items()}},
            "probe_scaled": {"decode_sd": ps.decode_sd, "prefill_sd": ps.prefill_sd,
                             "kinds": {k: v["decode"] for k, v in ps.kinds.items()},
                             "scale_range": [min(figures) / statistics.median(figures),
                                             max(figures) / statistics.median(figures)]}}


def read_gz(path: Path) -> Trace:
    with tempfile.NamedTemporaryFile("wb", suffix=".trace.jsonl") as t:
        t.write(gzip.open(path).read())
        t.flush()
        return read_trace(t.name)


def rms_log(xs: list[float]) -> float:
    return math.sqrt(sum(math.log(x) ** 2 for x in xs) / len(xs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA / "shape-development.json")
    args = ap.parse_args()
    # each slice's merged trace (beside its rounds), as the campaign's fit read them
    slices = sorted((DATA / "heldout-v13" / "calibrate").glob("s*"))
    cal_traces = [read_gz(s / f"{p}.trace.jsonl.gz") for s in slices for p in POLICIES]
    tests = {f"{c}/{real.parent.name}": padded._traces(real, POLICIES)
             for c in ("v13", "v12") for real in sorted((DATA / f"heldout-{c}").glob("*/real"))}
    rows = {}
    for name in ("as_shipped", "padded_indexer", "prompt_chunks", "decode_scope"):
        with candidate(name):
            cal = fit.fit_traces(cal_traces)
            ws = cal.workload_shift
            row = {"decode_sd": ws.decode_sd,
                   "prefill_sd": None if name == "decode_scope" else ws.prefill_sd,
                   "kinds": {k: {"decode": v["decode"],
                                 "prefill": None if name == "decode_scope" else v.get("prefill")}
                             for k, v in ws.kinds.items()}}
            for c in ("v13", "v12"):
                r = {n: decode_ratio(cal, t) for n, t in tests.items() if n.startswith(c)}
                row[f"{c}_tests_decode"] = {"rms_log": rms_log(list(r.values())), "min": min(r.values()),
                                            "max": max(r.values()), "configs": r}
            if name == "as_shipped":
                stream = [tr for tr in cal_traces if trace_kind(tr) == "calibrate-stream"]
                rest = [tr for tr in cal_traces if trace_kind(tr) != "calibrate-stream"]
                left = dataclasses.replace(cal, cost=fit.fit_cost(rest))
                row["stream_left_out_by_batch"] = decode_ratio(left, stream, by_batch=True)
                row["stream_in_sample_by_batch"] = decode_ratio(cal, stream, by_batch=True)
        rows[name] = row
        kinds = " ".join(f"{k.removeprefix('calibrate-')} {v['decode']:.3f}" for k, v in row["kinds"].items())
        print(f"{name:15s} leave-one-kind-out decode SD {row['decode_sd']:.3f} prefill SD "
              f"{None if row['prefill_sd'] is None else round(row['prefill_sd'], 3)} | {kinds} | "
              f"v13 tests decode RMS log {row['v13_tests_decode']['rms_log']:.3f} "
              f"({row['v13_tests_decode']['min']:.2f}-{row['v13_tests_decode']['max']:.2f}), v12 "
              f"{row['v12_tests_decode']['rms_log']:.3f}", flush=True)
    print("stream by batch size (left out / in-sample):",
          {b: (round(v, 2), round(rows["as_shipped"]["stream_in_sample_by_batch"][b], 2))
           for b, v in rows["as_shipped"]["stream_left_out_by_batch"].items()})
    ctl = controls(cal_traces, slices)
    print("in-sample decode level by slice (fresh, share):",
          {s: tuple(round(v, 2) for v in d.values()) for s, d in ctl["slice_decode_level"].items()})
    print(f"within a slice (fresh vs share) log SD {ctl['within_slice_policy_sd']:.3f}; within a kind "
          "(its 3 slices) log SD " + " ".join(f"{k.removeprefix('calibrate-')} {v:.3f}"
                                             for k, v in ctl["within_kind_slice_sd"].items()))
    lb, pr = ctl["leave_one_time_block_out"], ctl["probe_scaled"]
    print(f"leave-one-time-block-out (shape balanced) decode SD {lb['decode_sd']:.3f} prefill SD "
          f"{lb['prefill_sd']:.3f} {({k: round(v, 3) for k, v in lb['blocks'].items()})}")
    print(f"probe-scaled runs: leave-one-kind-out decode SD {pr['decode_sd']:.3f} "
          f"prefill SD {pr['prefill_sd']:.3f}; correlation of run level and probe (logs) "
          f"{ctl['level_probe_log_corr']:.2f}")
    atomic_write_json(args.out, {"candidates": rows, "controls": ctl, "note": (
        "post-hoc development on seen data (v13 calibration; v13 and v12 tests replayed with the "
        "fit on all four kinds); point fits; CPU seconds as traced; one run")})


if __name__ == "__main__":
    main()
