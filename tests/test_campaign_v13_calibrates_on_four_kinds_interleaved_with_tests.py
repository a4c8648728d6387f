"""The v13 campaign's registered design (docs/uncertainty.md §14): 12 configurations never run
before, inside and outside alternating, each round whole batches; a calibration of four workload
kinds (one experiment file each, so the fit can leave each out), slice i of kind i mod 4 right
before configuration i, with its own seed, its kind's rounds and the policy order alternating."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v13 as v13  # noqa: E402

from mtpsim.rounds import auto_rounds  # noqa: E402
from mtpsim.spec import load_experiment  # noqa: E402

EARLIER = ROOT / "experiments" / "heldout"


def _shape(path: Path) -> tuple:
    e = load_experiment(str(path))
    w = e.workload
    return (e.k, e.index_topk, w.input_len, w.input_len_distribution, w.max_concurrency)


def test_the_registered_configurations_are_the_specs_alternate_and_were_never_run():
    specs = {p.stem for p in v13.EXP.glob("*.toml")} - set(v13.KINDS)
    assert set(v13.CONFIGS) == specs and len(v13.CONFIGS) == 12
    assert [n.split("-")[0] for n in v13.CONFIGS] == ["in", "out"] * 6
    later = {"v13", "v14", "v15", "v16"}  # v13 and the campaigns after it
    before = [p for p in EARLIER.rglob("*.toml") if not later & set(p.parts) and "calibrate" not in p.stem]
    assert not {p.stem for p in before} & set(v13.CONFIGS)
    old = {_shape(p) for p in before}
    assert not [n for n in v13.CONFIGS if _shape(v13.EXP / f"{n}.toml") in old]


def test_inside_configurations_lie_inside_the_kinds_range_and_outside_ones_do_not():
    kinds = [load_experiment(str(v13.EXP / f"{k}.toml")) for k in v13.KINDS]
    hi_ctx = max(k.workload.input_len * (1 + k.workload.input_len_spread
                                         if k.workload.input_len_distribution == "uniform" else 1)
                 for k in kinds)
    conc = max(k.workload.max_concurrency for k in kinds)
    for name in v13.CONFIGS:
        e = load_experiment(str(v13.EXP / f"{name}.toml"))
        w = e.workload
        top = w.input_len * (1 + (w.input_len_spread if w.input_len_distribution == "uniform" else 0))
        inside = e.k == 4 and e.index_topk == 64 and top <= hi_ctx and w.max_concurrency <= conc
        assert inside == name.startswith("in-"), name


def test_every_round_is_whole_batches_as_run_real_picks_them():
    for name in v13.CONFIGS:
        w = tomllib.loads((v13.EXP / f"{name}.toml").read_text())["workload"]
        n, conc, rounds = w["num_prompts"], w["max_concurrency"], w["rounds"]
        assert rounds == auto_rounds(n, conc), name
        assert n % rounds == 0 and (n // rounds) % conc == 0, name
    for kind in v13.KINDS:  # the calibration's bursts too: a round of whole batches
        w = tomllib.loads((v13.EXP / f"{kind}.toml").read_text())["workload"]
        assert w["num_prompts"] == 24
        if w["request_rate"] == float("inf"):
            assert (w["num_prompts"] // w["rounds"]) % w["max_concurrency"] == 0, kind


def test_slices_of_each_kind_and_configurations_run_interleaved_in_order(tmp_path, monkeypatch):
    calls: list[list[str]] = []

    def fake(args, deadline):  # a run that finishes: its result files appear
        calls.append(args)
        if "--out" in args:
            out = Path(args[args.index("--out") + 1])
            out.mkdir(parents=True, exist_ok=True)
            for p in v13.POLICIES:
                (out / f"{p}.json").write_text("{}")
        return True

    monkeypatch.setattr(v13, "mtpsim", fake)
    deadline = v13.stop_time(tmp_path)
    assert v13.stop_time(tmp_path) == deadline  # recorded once: a resumed campaign keeps its clock
    for i, name in enumerate(v13.CONFIGS[:5]):
        assert v13.run_slice(tmp_path, i, False, deadline) and v13.run_config(tmp_path, name, False, deadline)
    stems = [Path(c[1]).stem for c in calls]
    assert stems == [x for i in range(5) for x in (v13.KINDS[i % 4], v13.CONFIGS[i])]
    slices = calls[::2]
    assert [c[c.index("--seed") + 1] for c in slices] == ["131", "132", "133", "134", "135"]
    assert [c[c.index("--rounds") + 1] for c in slices] == ["1", "6", "3", "6", "1"]
    orders = [[c[j + 1] for j, a in enumerate(c) if a == "-p"] for c in slices]
    assert orders == [["fresh", "share"], ["share", "fresh"]] * 2 + [["fresh", "share"]]
    assert v13.run_slice(tmp_path, 0, False, deadline) and len(calls) == 10  # finished: not run again
    assert v13.fit(tmp_path)
    fit_call = calls[-1]
    traces = [fit_call[j + 1] for j, a in enumerate(fit_call) if a == "--trace"]
    assert len(traces) == 10 and fit_call[fit_call.index("--bootstrap") + 1] == "32"


def test_the_kinds_are_their_experiment_files_as_the_fit_reads_them():
    from mtpsim.calibration.shift import trace_kind
    from mtpsim.trace import Trace
    from mtpsim.trace_records import TraceMeta

    for kind in v13.KINDS:
        meta = TraceMeta(experiment=f"experiments/heldout/v13/{kind}.toml")
        tr = Trace("reference", "fresh", 4, 64, meta=meta)
        assert trace_kind(tr) == kind
