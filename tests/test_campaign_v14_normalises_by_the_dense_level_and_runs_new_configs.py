"""The v14 campaign's registered design (docs/uncertainty.md §18): 12 configurations never run in
v7-v13, inside and outside alternating, each round whole batches; v13's four calibration kinds with
new seeds, slice i right before configuration i; every run reads the level probe densely
(--level-every 8); the fit is level-normalised; a test run's timings meet the prediction on the
fit's unit through the run's own dense level, whose error joins the value's measurement SE."""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v13 as v13  # noqa: E402
import campaign_v14 as v14  # noqa: E402

from mtpsim.rounds import auto_rounds  # noqa: E402
from mtpsim.spec import load_experiment  # noqa: E402

EARLIER = ROOT / "experiments" / "heldout"


def _shape(path: Path) -> tuple:
    e = load_experiment(str(path))
    w = e.workload
    return (e.k, e.index_topk, w.input_len, w.input_len_distribution, w.max_concurrency)


def test_the_configurations_are_the_specs_alternate_and_were_never_run_in_v7_to_v13():
    specs = {p.stem for p in v14.EXP.glob("*.toml")} - set(v14.KINDS)
    assert set(v14.CONFIGS) == specs and len(v14.CONFIGS) == 12
    assert [n.split("-")[0] for n in v14.CONFIGS] == ["in", "out"] * 6
    later = {"v14", "v15", "v16"}  # v14 and the campaigns after it
    before = [p for p in EARLIER.rglob("*.toml") if not later & set(p.parts) and "calibrate" not in p.stem]
    assert any("v13" in p.parts for p in before) and any("v7" in p.stem or "v8" in p.stem for p in before)
    assert not {p.stem for p in before} & set(v14.CONFIGS)
    old = {_shape(p) for p in before}
    assert not [n for n in v14.CONFIGS if _shape(v14.EXP / f"{n}.toml") in old]
    seeds = [tomllib.loads((v14.EXP / f"{n}.toml").read_text())["seed"] for n in v14.CONFIGS]
    assert seeds == list(range(1401, 1413))


def test_the_kinds_are_v13s_unchanged_but_for_their_seeds():
    assert v14.KINDS == v13.KINDS
    for i, kind in enumerate(v14.KINDS):
        a = tomllib.loads((v13.EXP / f"{kind}.toml").read_text())
        b = tomllib.loads((v14.EXP / f"{kind}.toml").read_text())
        assert b.pop("seed") == 201 + i and a.pop("seed") == 131 + i
        a.pop("description"), b.pop("description")
        assert a == b, kind
    used = set(range(131, 143)) | set(range(161, 173)) | set(range(181, 193)) | set(range(1301, 1313))
    assert not set(range(v14.SLICE_SEED, v14.SLICE_SEED + 12)) & used


def test_inside_configurations_lie_inside_the_kinds_range_and_outside_ones_do_not():
    kinds = [load_experiment(str(v14.EXP / f"{k}.toml")) for k in v14.KINDS]
    hi_ctx = max(k.workload.input_len * (1 + k.workload.input_len_spread
                                         if k.workload.input_len_distribution == "uniform" else 1)
                 for k in kinds)
    conc = max(k.workload.max_concurrency for k in kinds)
    for name in v14.CONFIGS:
        e = load_experiment(str(v14.EXP / f"{name}.toml"))
        w = e.workload
        top = w.input_len * (1 + (w.input_len_spread if w.input_len_distribution == "uniform" else 0))
        # inside: also below the burst kinds' longest context (1,700 + 96), whatever the stream drew
        inside = e.k == 4 and e.index_topk == 64 and top + w.output_len <= 1796 and w.max_concurrency <= conc
        assert top <= hi_ctx or not inside
        assert inside == name.startswith("in-"), name


def test_every_round_is_whole_batches_as_run_real_picks_them():
    for name in v14.CONFIGS:
        w = tomllib.loads((v14.EXP / f"{name}.toml").read_text())["workload"]
        n, conc, rounds = w["num_prompts"], w["max_concurrency"], w["rounds"]
        assert rounds == auto_rounds(n, conc), name
        assert n % rounds == 0 and (n // rounds) % conc == 0, name


def _fake_runs(monkeypatch, calls):
    def fake(args, deadline):  # a run that finishes: its result files appear
        calls.append((args, deadline))
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for p in v14.POLICIES:
            (out / f"{p}.json").write_text("{}")
        return True

    monkeypatch.setattr(v14, "mtpsim", fake)


def _clock_open(monkeypatch):
    # the registered UTC limits (7:20 / 7:27 on 2026-12-03) bound the campaign's own run; these
    # tests ask about order and flags, at any date
    later = datetime(2100, 1, 1, tzinfo=UTC)
    monkeypatch.setattr(v14, "LAST_START_UTC", later)
    monkeypatch.setattr(v14, "HARD_STOP_UTC", later)


def test_nothing_starts_after_the_registered_last_start(tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    monkeypatch.setattr(v14, "LAST_START_UTC", datetime(2026, 12, 3, 7, 20, tzinfo=UTC))
    monkeypatch.setattr(v14.time, "time", lambda: datetime(2026, 12, 3, 7, 21, tzinfo=UTC).timestamp())
    assert v14.run_all(tmp_path, dry=False) == [] and calls == []
    assert "clock rule: slice 0" in (tmp_path / "campaign.log").read_text()


def test_slices_and_configs_interleave_read_the_level_densely_and_fit_normalised(tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    _clock_open(monkeypatch)
    ran = v14.run_all(tmp_path, dry=False)
    assert ran == list(v14.CONFIGS)
    stems = [Path(c[1]).stem for c, _ in calls]
    assert stems == [x for i in range(12) for x in (v14.KINDS[i % 4], v14.CONFIGS[i])]
    assert all(c[c.index("--level-every") + 1] == "8" for c, _ in calls)
    slices = [c for c, _ in calls[::2]]
    assert [int(c[c.index("--seed") + 1]) for c in slices] == list(range(201, 213))
    assert [c[c.index("--rounds") + 1] for c in slices[:4]] == ["1", "6", "3", "6"]
    orders = [[c[j + 1] for j, a in enumerate(c) if a == "-p"] for c in slices[:2]]
    assert orders == [["fresh", "share"], ["share", "fresh"]]
    _, hard = v14.clock(tmp_path)
    assert {d for _, d in calls} == {hard}  # a run still going at the hard stop is stopped
    seen = {}

    def fake_fit(traces, bootstrap, save_to, normalise=None):
        seen.update(traces=traces, bootstrap=bootstrap, normalise=normalise)

    import mtpsim.runs.simulate

    monkeypatch.setattr(mtpsim.runs.simulate, "fit", fake_fit)
    assert v14.fit(tmp_path)
    assert len(seen["traces"]) == 24 and seen["bootstrap"] == 32 and seen["normalise"] == "level"


def test_the_clock_rule_starts_nothing_after_its_minutes(tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    t0 = time.time() - 60 * (v14.RUN_MINUTES + 1)
    (tmp_path / "started.json").write_text(json.dumps({"started_unix": t0}))
    last, hard = v14.clock(tmp_path)
    assert last <= t0 + 60 * v14.RUN_MINUTES and hard <= t0 + 60 * v14.HARD_MINUTES
    assert last <= v14.LAST_START_UTC.timestamp() and hard <= v14.HARD_STOP_UTC.timestamp()
    assert v14.run_all(tmp_path, dry=False) == [] and calls == []
    assert "clock rule" in (tmp_path / "campaign.log").read_text()


def _reading(x: float, engine_s: float = 1.0) -> dict:
    return {"version": 1, "cpus_s": [x], "walls_s": [x], "cpu_s": x, "wall_s": x, "engine_s": engine_s,
            "cost_wall_s": 0.0}


def _result(level_xs, tpot, thr, al=2.0):
    from mtpsim.level import record

    rec = record([_reading(x) for x in level_xs], 0.0, average="weighted", every_steps=8)
    rounds = [{"metrics": {"median_tpot_ms": tpot * f, "output_throughput": thr / f}} for f in (0.9, 1.1)]
    reqs = [SimpleNamespace(num_drafts=10, num_accepted_tokens=10 + i % 3) for i in range(8)]
    vals = {"median_tpot_ms": tpot, "output_throughput": thr, "spec_decode_acceptance_length": al}
    return SimpleNamespace(extra=SimpleNamespace(level=rec, rounds=rounds), requests=reqs, get=vals.get)


def test_a_runs_timings_go_on_the_fits_unit_by_its_own_dense_level_with_its_error():
    from mtpsim.level import figure

    xs = [0.18, 0.2, 0.22, 0.2, 0.19, 0.21]
    res = {p: _result(xs, tpot=50.0, thr=100.0) for p in v14.POLICIES}
    L = figure(res["fresh"].extra.level, "cpu")
    lse = statistics.stdev(map(math.log, xs)) / math.sqrt(len(xs))
    assert v14.level_of(res["fresh"]) == pytest.approx((L, lse))
    q = {float(k): 1.0 for k in ("0.025", "0.05", "0.1", "0.25", "0.5", "0.75", "0.9", "0.95", "0.975")}
    pred = {"inside": True, "levels": {p: {m: {str(k): v for k, v in q.items()} for m in v14.METRICS}
                                       for p in v14.POLICIES}}
    vals = {(v.what, v.metric): v for v in v14.level_values("x", pred, res, unit=0.1)}
    tp, th = vals[("fresh", "median_tpot_ms")], vals[("fresh", "output_throughput")]
    assert tp.real == pytest.approx(50.0 * 0.1 / L) and th.real == pytest.approx(100.0 * L / 0.1)
    round_se = statistics.stdev([45.0, 55.0]) / math.sqrt(2) * 0.1 / L
    assert tp.measurement_se == pytest.approx(math.hypot(round_se, lse * tp.real))
    assert tp.drift_sd == pytest.approx(v14.DRIFT_CPU * 1.0)
    assert vals[("fresh", "spec_decode_acceptance_length")].real == 2.0  # not a timing: not scaled


def test_a_run_with_one_reading_takes_the_stated_error_and_one_without_a_level_is_refused():
    res = _result([0.2], tpot=50.0, thr=100.0)
    assert v14.level_of(res) == pytest.approx((0.2, v14.LEVEL_SE_FALLBACK))
    bare = _result([0.2], tpot=50.0, thr=100.0)
    bare.extra.level = None
    pred = {"inside": True, "levels": {p: {m: {"0.5": 1.0} for m in v14.METRICS} for p in v14.POLICIES}}
    with pytest.raises(SystemExit, match="no level probe figure"):
        v14.level_values("x", pred, {p: bare for p in v14.POLICIES}, unit=0.1)
