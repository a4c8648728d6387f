"""Dense level sampling (docs/uncertainty.md §17): with `run-real --level-every N` the reference
engine's level probe reads one timed step, without warm-up, every N engine steps, off the run's
clock; each reading carries the engine seconds since the one before, and the run's level is their
trimmed mean weighted by those seconds. Records keep §16's layout (a record without `average`
still means the median) and add `average` and `every_steps`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from mtpsim import level
from mtpsim.engine import weights
from mtpsim.engine.level import SPARSE, RunLevels, Sampling

sys.path.insert(0, str(Path(__file__).parent))


def _reading(cpus, engine_s=None, where=""):
    r = {"version": level.LEVEL_VERSION, "where": where, "cpus_s": cpus, "walls_s": [2 * c for c in cpus],
         "cost_wall_s": 0.5, "cost_cpu_s": 0.25}
    return r if engine_s is None else {**r, "engine_s": engine_s}


class _Clock:
    """An engine clock: each engine step adds 1 s, each probe step 0.1 s."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class _FakeProbe:
    setup_s = 0.0

    def __init__(self, clock):
        self.clock, self.calls = clock, []

    def reading(self, repeats=3, where="", warmup=1):
        self.calls.append((where, repeats, warmup))
        self.clock.t += 0.1 * (repeats + warmup)
        return _reading([0.1] * repeats, where=where)


def test_dense_readings_come_every_n_steps_off_the_clock_with_the_engine_time_between(monkeypatch):
    clock = _Clock()
    fake = _FakeProbe(clock)
    monkeypatch.setattr("mtpsim.engine.level.probe_for", lambda path, device: fake)
    runs = RunLevels(weights.BUILTIN, torch.device("cpu"), Sampling.dense(4))
    runs.mark(clock())
    taken = []
    for n in range(1, 11):
        clock.t += 1.0  # engine step n
        taken.append(runs.between_steps(n, clock))
    clock.t += 0.5  # after step 10: the tail is steps 9 and 10 and this half second
    rec = runs.finish(clock())
    assert [c[0] for c in fake.calls] == ["start", "step 4", "step 8", "end"]
    assert [c[1:] for c in fake.calls] == [(1, 1), (1, 0), (1, 0), (1, 1)]  # one timed step each
    assert taken == pytest.approx([0, 0, 0, 0.1, 0, 0, 0, 0.1, 0, 0])
    assert runs.off_clock_s == pytest.approx(0.2)  # what the engine subtracts from its clock
    assert [r["engine_s"] for r in rec["readings"]] == pytest.approx([0.0, 4.0, 4.0, 2.5])
    assert rec["every_steps"] == 4 and rec["average"] == "weighted"


def test_sparse_sampling_is_section_16s():
    assert (SPARSE.every, SPARSE.repeats, SPARSE.warmup, SPARSE.average) == (128, 3, 1, "median")
    assert SPARSE.ends_repeats == 3
    assert Sampling.dense(6) == Sampling(every=6, repeats=1, warmup=0, average="weighted", ends_repeats=1)
    with pytest.raises(ValueError):
        Sampling(average="mean")


def test_trimmed_mean_drops_the_weight_at_each_end():
    xs = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert level.trimmed_mean(xs, [1.0] * 5, trim=0.0) == pytest.approx(22.0)
    # 10 % of 5 at each end: half of 1.0's and of 100.0's weight kept
    assert level.trimmed_mean(xs, [1.0] * 5) == pytest.approx((0.5 + 2 + 3 + 4 + 50) / 4)
    assert level.trimmed_mean(xs, [1.0] * 5, trim=0.2) == pytest.approx(3.0)
    # weights: 3.0 stands for most of the time
    assert level.trimmed_mean([1.0, 3.0, 5.0], [1.0, 8.0, 1.0]) == pytest.approx(3.0)
    assert level.trimmed_mean([1.0, 3.0], [1.0, 3.0], trim=0.0) == pytest.approx(2.5)


def test_the_run_level_by_each_average_and_the_records_that_keep_it():
    rs = [_reading([0.2, 0.2, 0.2], 0.0, "start"), _reading([0.1], 9.0), _reading([0.3], 1.0),
          _reading([0.2, 0.5, 0.5], 0.0, "end")]
    assert level.figure(rs, average="median") == pytest.approx(0.2)
    assert level.figure(rs, average="trimmed") == pytest.approx(
        level.trimmed_mean([0.2] * 3 + [0.1, 0.3] + [0.2, 0.5, 0.5], [1.0] * 8))
    # weighted: the readings with no engine time before them weigh nothing
    assert level.figure(rs, average="weighted") == pytest.approx(level.trimmed_mean([0.1, 0.3], [9.0, 1.0]))
    rec = level.record(rs, 0.0, 10.0, average="weighted", every_steps=4)
    assert rec["cpu_s"] == level.figure(rs, average="weighted")
    assert rec["wall_s"] == pytest.approx(2 * rec["cpu_s"])
    assert level.figure(rec) == rec["cpu_s"]  # the record's own average
    assert level.figure(rec, average="median") == pytest.approx(0.2)
    # a §16 record (no average field) still means the median
    old = {k: v for k, v in level.record(rs, 0.0).items() if k not in ("average", "every_steps")}
    assert level.figure(old) == pytest.approx(0.2)
    # a reading without its engine time: equal weights
    assert level.figure([*rs, _reading([0.9])], average="weighted") == pytest.approx(
        level.figure([*rs, _reading([0.9])], average="trimmed"))
    pooled = level.pooled([rec, level.record(rs, 0.0, 5.0, average="weighted", every_steps=4)])
    assert pooled["average"] == "weighted" and pooled["every_steps"] == 4 and len(pooled["readings"]) == 8
    assert pooled["cpu_s"] == pytest.approx(rec["cpu_s"]) and pooled["run_wall_s"] == pytest.approx(15.0)
    mixed = level.pooled([rec, level.record(rs, 0.0, 5.0)])
    assert mixed["average"] == "median" and mixed["every_steps"] is None


def test_normalising_by_a_dense_record_uses_its_weighted_figure():
    from _synthetic_traces import make_trace

    from mtpsim.calibration.normalise import normalised

    trs = [make_trace("fresh", s, n_requests=8) for s in range(2)]
    for tr, slow in zip(trs, (0.1, 0.2), strict=True):
        tr.meta.clock = "cpu"
        tr.meta.level = level.record([_reading([0.9], 0.0, "start"), _reading([slow], 5.0),
                                      _reading([0.9], 0.0, "end")], 0.0, average="weighted", every_steps=4)
    _, how = normalised(trs, "level")
    assert how["scales"] == pytest.approx([1.5, 0.75])  # median unit 0.15; the ends weigh nothing


def test_a_dense_run_reads_every_n_engine_steps(tmp_path):
    from test_run_real_reference_writes_results_and_traces import _setup

    from mtpsim.engine.runner import run_policy
    from mtpsim.spec import load_experiment

    exp = load_experiment(str(_setup(tmp_path)))
    res, tr = run_policy(exp, "share", requests=range(0, 1), level=Sampling.dense(2))
    rec = res.extra.level
    dense = rec["readings"][1:-1]
    assert [r["where"] for r in dense] == [f"step {n}" for n in range(2, len(tr.steps) + 1, 2)]
    assert all(len(r["cpus_s"]) == 1 for r in rec["readings"]) and len(dense) >= 1
    assert all(r["engine_s"] >= 0 for r in rec["readings"]) and rec["readings"][0]["engine_s"] == 0
    assert rec["every_steps"] == 2 and rec["average"] == "weighted" and tr.meta.level == rec


def test_run_real_level_every_reaches_the_runner_as_dense_sampling(tmp_path, monkeypatch):
    from test_reports_fit_80_and_120_columns import write_small
    from typer.testing import CliRunner

    from mtpsim import probe
    from mtpsim.cli import app
    from mtpsim.real.reference import InProcessReference
    from mtpsim.report.real import resume
    from mtpsim.sim.simulator import simulate

    asked: list = []

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
    monkeypatch.setattr(InProcessReference, "target", f"{__name__}:_dense_runner")
    monkeypatch.setattr(sys.modules[__name__], "_dense_runner", runner, raising=False)
    exp = write_small(tmp_path)
    for flags, want in ((["--level-every", "6"], Sampling.dense(6)), ([], True),
                        (["--level-every", "6", "--no-probe"], False)):
        asked.clear()
        r = CliRunner().invoke(app, ["run-real", str(exp), "--out", str(tmp_path / f"o{len(flags)}"),
                                     "--rounds", "1", *flags])
        assert r.exit_code == 0, r.output
        assert asked and all(a == want for a in asked), (flags, asked)
    r = CliRunner().invoke(app, ["run-real", str(exp), "--out", str(tmp_path / "bad"), "--level-every", "-1"])
    assert r.exit_code == 2
    assert "--level-every 6" in " ".join(resume(exp, "reference", tmp_path, None, None, None, False, False,
                                                "mtpsim", None, 6))
