"""The in-engine level probe (mtpsim.engine.level, mtpsim.level): one fixed synthetic decode step
on the run's own model code, the same work at every reading; its record travels through the
result and trace files and pools over rounds; the run's level is the median of every timed step;
its time is taken off the run's clock and counted as overhead; compare and the calibration fit
can normalise timings by it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from _synthetic_traces import make_trace

from mtpsim import level, rounds
from mtpsim.calibration.fit import fit_traces
from mtpsim.calibration.normalise import normalised, scaled
from mtpsim.calibration.schema import CalibrationError
from mtpsim.engine import weights
from mtpsim.engine.level import STEP, LevelProbe, RunLevels, Sampling, Step
from mtpsim.paired import paired_delta
from mtpsim.result import load_result


def _reading(cpus, walls=None, where=""):
    walls = walls or [2 * c for c in cpus]
    return {"version": level.LEVEL_VERSION, "where": where, "cpus_s": cpus, "walls_s": walls,
            "cpu_s": sorted(cpus)[len(cpus) // 2], "wall_s": sorted(walls)[len(walls) // 2],
            "cost_wall_s": 0.5, "cost_cpu_s": 0.25}


@pytest.fixture(scope="module")
def probe():
    torch.set_num_threads(1)
    return LevelProbe(weights.BUILTIN, torch.device("cpu"))


def test_the_step_is_the_same_work_every_time(probe, monkeypatch):
    calls: list[list] = []
    model = probe.model
    for name in ("forward", "draft"):
        real = getattr(model, name)

        def spy(*args, real=real, name=name):
            calls[-1].append((name, tuple(args[0].shape), args[-3 if name == "forward" else -3].tolist()))
            return real(*args)

        monkeypatch.setattr(model, name, spy)
    caches = []
    for _ in range(2):
        calls.append([])
        probe.step()
        caches.append(model.layers[0].attention.cache.ik.clone())
    k, B = STEP.k, STEP.batch
    assert calls[0] == calls[1]  # same calls, shapes and positions
    assert [c[0] for c in calls[0]] == ["forward"] + ["draft"] * k
    assert calls[0][0][1] == (B, k + 1) and calls[0][1][1] == (B, k + 1)
    assert all(c[1] == (B, 1) for c in calls[0][2:])
    assert [p[0] for p in calls[0][0][2]] == [c - 1 for c in STEP.contexts]
    assert torch.equal(caches[0], caches[1])  # every step writes the same keys at the same rows


def test_a_reading_times_the_step_on_both_clocks(probe):
    r = probe.reading(repeats=2, where="start")
    assert r["version"] == level.LEVEL_VERSION and r["step"] == STEP.to_json()
    assert len(r["cpus_s"]) == len(r["walls_s"]) == 2 and r["threads"] == torch.get_num_threads()
    assert 0 < r["cpu_s"] <= r["cost_cpu_s"] and r["cost_wall_s"] >= sum(r["walls_s"])


def test_a_smaller_model_gets_a_step_inside_its_rope_table():
    s = Step().fitting(512)
    assert max(s.contexts) <= 512 - 2 * s.k - 1 and s.index_topk <= min(s.contexts)
    assert Step().fitting(8192) == Step()


def test_level_is_the_median_of_every_timed_step_and_records_pool():
    a = level.record([_reading([0.1, 0.3, 0.2]), _reading([0.5, 0.4])], setup_s=1.0, run_wall_s=10.0)
    assert a["cpu_s"] == pytest.approx(0.3) and a["wall_s"] == pytest.approx(0.6)
    assert a["overhead_wall_s"] == pytest.approx(2.0) and a["overhead_share"] == pytest.approx(0.2)
    b = level.record([_reading([0.9])], setup_s=0.0, run_wall_s=5.0)
    p = level.pooled([a, None, b])
    assert len(p["readings"]) == 3 and p["cpu_s"] == pytest.approx(0.35)
    assert p["overhead_wall_s"] == pytest.approx(2.5) and p["overhead_share"] == pytest.approx(2.5 / 15)
    assert level.figure(None) is None and level.figure({"version": 99, "cpus_s": [1.0]}) is None
    assert level.pooled([None, {}]) is None


def test_normalisation_arithmetic():
    # measured 10 s at level 0.2 is 5 s at level 0.1; a rate of 10 tok/s is 20 tok/s there
    assert level.scaled(10.0, 0.2, 0.1, rate=False) == pytest.approx(5.0)
    assert level.scaled(10.0, 0.2, 0.1, rate=True) == pytest.approx(20.0)


class _FakeProbe:
    setup_s = 0.7

    def __init__(self):
        self.n = 0

    def reading(self, repeats=3, where="", warmup=1):
        self.n += 1
        return _reading([0.01 * self.n], where=where)


def test_readings_between_steps_are_taken_off_the_clock_and_counted(monkeypatch):
    fake = _FakeProbe()
    monkeypatch.setattr("mtpsim.engine.level.probe_for", lambda path, device: fake)
    runs = RunLevels(weights.BUILTIN, torch.device("cpu"), Sampling(every=3))
    ticks = iter([1.0, 1.25, 2.0, 2.5])
    taken = [runs.between_steps(n, lambda: next(ticks)) for n in range(1, 7)]
    assert taken == [0, 0, 0.25, 0, 0, 0.5] and runs.off_clock_s == pytest.approx(0.75)
    rec = runs.finish()
    assert [r["where"] for r in rec["readings"]] == ["start", "step 3", "step 6", "end"]
    assert rec["setup_s"] == 0.0  # the fake was not built here: its setup is not this run's
    assert rec["overhead_wall_s"] == pytest.approx(4 * 0.5) and rec["run_wall_s"] > 0


def test_a_run_records_its_level_and_it_round_trips_through_json_and_pooling(tmp_path):
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_run_real_reference_writes_results_and_traces import _setup

    from mtpsim.engine.runner import run_policy
    from mtpsim.spec import load_experiment
    from mtpsim.trace import read_trace

    exp = load_experiment(str(_setup(tmp_path)))
    parts = [run_policy(exp, "share", requests=range(i, i + 1), level=True) for i in range(2)]
    res, tr = parts[0]
    rec = res.extra.level
    assert [r["where"] for r in rec["readings"]][::len(rec["readings"]) - 1] == ["start", "end"]
    assert rec["cpu_s"] == level.figure(rec["readings"]) and tr.meta.level == rec
    res.write(tmp_path / "r.json")
    tr.write(tmp_path / "r.trace.jsonl")
    assert load_result(tmp_path / "r.json").extra.level == rec
    assert read_trace(tmp_path / "r.trace.jsonl").meta.level == rec
    for i, (r, _) in enumerate(parts):
        r.extra.round = {"index": i, "of": 2, "position": 0}
    pooled = rounds.pool([p[0] for p in parts])
    assert [x["level"] for x in pooled.extra.rounds] == [p[0].extra.level for p in parts]
    both = [x for p in parts for x in p[0].extra.level["readings"]]
    assert pooled.extra.level["readings"] == both
    assert rounds.pool_traces([p[1] for p in parts]).meta.level["readings"] == both
    plain, _ = run_policy(exp, "share", requests=range(0, 1))
    assert plain.extra.level is None


def _with_levels(traces, factors):
    out = []
    for tr, f in zip(traces, factors, strict=True):
        t = scaled(tr, f)
        t.meta.clock = "cpu"
        t.meta.level = level.record([_reading([0.05 * f] * 3)], 0.0)
        out.append(t)
    return out


def test_the_fit_normalised_by_level_undoes_a_level_that_moved_between_runs():
    base = [make_trace(p, seed, n_requests=16) for seed, p in enumerate(("fresh", "share", "fresh"))]
    same = fit_traces(_with_levels(base, [1.0] * 3))
    moved_traces = _with_levels(base, [1.0, 1.3, 1.0])
    moved = fit_traces(moved_traces)
    fixed = fit_traces(moved_traces, normalise="level")
    assert fixed.machine["normalised"]["by"] == "level" and fixed.machine["normalised"]["clock"] == "cpu"
    for p, fit in same.cost.phases.items():
        assert fixed.cost.phases[p].coef == pytest.approx(fit.coef, rel=1e-6, abs=1e-12), p
    assert any(not math.isclose(a, b, rel_tol=1e-3) for p in same.cost.phases
               for a, b in zip(moved.cost.phases[p].coef, same.cost.phases[p].coef, strict=True) if b > 0)
    scaled, how = normalised(moved_traces, "level")
    assert how["unit_s"] == pytest.approx(0.05) and min(how["scales"]) == pytest.approx(1 / 1.3)
    with pytest.raises(CalibrationError, match="level figure"):
        normalised(base, "level")


def test_compare_can_pair_rounds_in_units_of_the_level_probe():
    from test_compare_pairs_interleaved_rounds_so_drift_is_not_significant import _ramped

    fresh, share = _ramped(6, effect=0.0, interleaved=True, ramp=0.2)
    for res in (fresh, share):  # the level slowed exactly as the machine did
        res.extra.clock = "cpu"
        for rnd in res.extra.rounds:
            cpu = 1.0 / rnd["metrics"]["output_throughput"]
            rnd["level"] = level.record([_reading([cpu] * 3)], 0.0)
    raw = paired_delta(fresh, share, "output_throughput")
    norm = paired_delta(fresh, share, "output_throughput", normalise="level")
    assert raw is not None and norm is not None
    assert max(abs(d) for d in norm.deltas_pct) < 1e-9 < min(abs(d) for d in raw.deltas_pct)


def test_compare_normalise_level_flag_pairs_in_level_units(tmp_path):
    import json

    from test_compare_pairs_interleaved_rounds_so_drift_is_not_significant import _ramped
    from typer.testing import CliRunner

    from mtpsim.cli import app

    fresh, share = _ramped(6, effect=0.0, interleaved=True, ramp=0.2)
    for res in (fresh, share):
        res.extra.clock = "cpu"
        for rnd in res.extra.rounds:
            rnd["level"] = level.record([_reading([1.0 / rnd["metrics"]["output_throughput"]] * 3)], 0.0)
        res.write(tmp_path / f"{res.policy}.json")
    out = {}
    for flag in ([], ["--normalise-level"]):
        r = CliRunner().invoke(app, ["compare", str(tmp_path), "--json", "--num-boot", "100", *flag])
        assert r.exit_code == 0, r.output
        ab = json.loads(r.output)["ab"]["real:share"]
        out[bool(flag)] = (ab["normalised"], {x["metric"]: x for x in ab["rows"]}["output_throughput"])
    assert out[True][0] == "level" and out[False][0] is False
    assert out[True][1]["verdict"] == "no practical difference" != out[False][1]["verdict"]


def test_run_real_asks_for_the_level_probe_by_the_backends_capability(tmp_path, monkeypatch):
    """The in-process reference engine declares `level`; run-real passes level=True to its
    runner only while the machine-speed probe is on (--no-probe: the runner is not asked)."""
    import sys

    from test_reports_fit_80_and_120_columns import write_small
    from typer.testing import CliRunner

    from mtpsim import probe
    from mtpsim.cli import app
    from mtpsim.real.reference import InProcessReference
    from mtpsim.sim.simulator import simulate

    assert InProcessReference.caps.level
    asked: list[bool] = []

    class NoTrace:
        meta = type("Meta", (), {})()

        def write(self, path):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text("")

    def runner(exp, policy, progress, level=False):
        asked.append(level)
        return simulate(exp, policy), NoTrace()

    reading = {"version": probe.PROBE_VERSION, "threads": 1, "repeats": 1, "wall_s": 0.1,
               "cpu_s": 0.1, "walls_s": [0.1], "cpus_s": [0.1], "utc": "2026-12-02T00:00:00Z"}
    monkeypatch.setattr(probe, "run_probe", lambda repeats=probe.REPEATS: dict(reading))
    monkeypatch.setattr(InProcessReference, "target", f"{__name__}:_level_runner")
    monkeypatch.setattr(sys.modules[__name__], "_level_runner", runner, raising=False)
    exp = write_small(tmp_path)
    for flags, want in (([], True), (["--no-probe"], False)):
        asked.clear()
        r = CliRunner().invoke(app, ["run-real", str(exp), "--out", str(tmp_path / f"o{len(flags)}"),
                                     "--rounds", "1", *flags])
        assert r.exit_code == 0, r.output
        assert asked and all(a is want for a in asked), (flags, asked)
