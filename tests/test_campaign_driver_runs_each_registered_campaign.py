"""The shared campaign driver (benchmarks/campaign_common.py) runs each registered campaign from v15
on as its registration says: inside configurations lie inside the kinds' range and outside ones do
not; nothing starts after the registered last start (from the first run
or midway) or after the clock rule's minutes; slices and configurations interleave, each slice at
its registered seed, in alternating policy order, every run reading the level densely and stopped
at the hard stop; the fit gets every slice's traces, normalised by level, with the registered
indexer keys. No test here reads the wall clock's date: each sets the clock it asks about."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_common as cc  # noqa: E402
import campaign_v15 as v15  # noqa: E402
import campaign_v16 as v16  # noqa: E402
import campaign_v17 as v17  # noqa: E402
import campaign_v18 as v18  # noqa: E402

from mtpsim.spec import load_experiment  # noqa: E402

CAMPAIGNS = pytest.mark.parametrize("C", [v15.CAMPAIGN, v16.CAMPAIGN, v17.CAMPAIGN, v18.CAMPAIGN],
                                    ids=["v15", "v16", "v17", "v18"])


@CAMPAIGNS
def test_inside_configurations_lie_inside_the_kinds_range_and_outside_ones_do_not(C):
    kinds = [load_experiment(str(C.exp / f"{k}.toml")) for k in C.kinds]
    hi_ctx = max(k.workload.input_len * (1 + k.workload.input_len_spread
                                         if k.workload.input_len_distribution == "uniform" else 1)
                 for k in kinds)
    conc = max(k.workload.max_concurrency for k in kinds)
    for name in C.configs:
        e = load_experiment(str(C.exp / f"{name}.toml"))
        w = e.workload
        top = w.input_len * (1 + (w.input_len_spread if w.input_len_distribution == "uniform" else 0))
        inside = e.k == 4 and e.index_topk == 64 and top + w.output_len <= 1796 and w.max_concurrency <= conc
        assert top <= hi_ctx or not inside
        assert inside == name.startswith("in-"), name


def _fake_runs(monkeypatch, calls):
    def fake(args, deadline):  # a run that finishes: its result files appear
        calls.append((args, deadline))
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for p in cc.POLICIES:
            (out / f"{p}.json").write_text("{}")
        return True

    monkeypatch.setattr(cc, "mtpsim", fake)


def _open_clock(C: cc.Campaign) -> cc.Campaign:
    later = datetime(2100, 1, 1, tzinfo=UTC)
    return dataclasses.replace(C, last_start_utc=later, hard_stop_utc=later)


@CAMPAIGNS
def test_nothing_starts_after_the_registered_last_start(C, tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    just_after = (C.last_start_utc + timedelta(minutes=1)).timestamp()
    monkeypatch.setattr(cc.time, "time", lambda: just_after)
    assert cc.run_all(C, tmp_path, dry=False) == [] and calls == []
    assert "clock rule: slice 0" in (tmp_path / "campaign.log").read_text()


@CAMPAIGNS
def test_nothing_starts_after_the_last_start_even_midway(C, tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    now = [C.last_start_utc.timestamp() - 3600]

    def fake_then_late(args, deadline):
        calls.append((args, deadline))
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for p in cc.POLICIES:
            (out / f"{p}.json").write_text("{}")
        if len(calls) == 3:  # slice 0, config 0, slice 1: then the clock passes the last start
            now[0] = C.last_start_utc.timestamp() + 1
        return True

    monkeypatch.setattr(cc, "mtpsim", fake_then_late)
    monkeypatch.setattr(cc.time, "time", lambda: now[0])
    assert cc.run_all(C, tmp_path, dry=False) == [C.configs[0]] and len(calls) == 3
    assert f"clock rule: {C.configs[1]} and later not started" in (tmp_path / "campaign.log").read_text()


@CAMPAIGNS
def test_slices_and_configs_interleave_read_the_level_densely_and_fit_normalised(C, tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    c = _open_clock(C)
    ran = cc.run_all(c, tmp_path, dry=False)
    assert ran == list(c.configs)
    stems = [Path(a[1]).stem for a, _ in calls]
    assert stems == [x for i in range(12) for x in (c.kinds[i % 4], c.configs[i])]
    assert all(a[a.index("--level-every") + 1] == "8" for a, _ in calls)
    slices = [a for a, _ in calls[::2]]
    assert [int(a[a.index("--seed") + 1]) for a in slices] == list(range(c.slice_seed, c.slice_seed + 12))
    assert [a[a.index("--rounds") + 1] for a in slices[:4]] == ["1", "6", "3", "6"]
    orders = [[a[j + 1] for j, x in enumerate(a) if x == "-p"] for a in slices[:2]]
    assert orders == [["fresh", "share"], ["share", "fresh"]]
    tests = [a for a, _ in calls[1::2]]
    for a, name in zip(tests, c.configs, strict=True):
        rounds = load_experiment(str(c.exp / f"{name}.toml")).workload.rounds
        assert a[a.index("--rounds") + 1] == str(rounds)
    _, hard = cc.clock(c, tmp_path)
    assert {d for _, d in calls} == {hard}  # a run still going at the hard stop is stopped
    seen = {}

    def fake_fit(traces, bootstrap, save_to, normalise=None, indexer_keys="own"):
        seen.update(traces=traces, bootstrap=bootstrap, normalise=normalise, indexer_keys=indexer_keys)

    import mtpsim.runs.simulate

    monkeypatch.setattr(mtpsim.runs.simulate, "fit", fake_fit)
    assert cc.fit(c, tmp_path)
    assert len(seen["traces"]) == 24 and seen["bootstrap"] == 32 and seen["normalise"] == "level"
    assert seen["indexer_keys"] == c.indexer_keys  # the registered fit option reaches the fit


@CAMPAIGNS
def test_the_clock_rule_starts_nothing_after_its_minutes(C, tmp_path, monkeypatch):
    calls: list = []
    _fake_runs(monkeypatch, calls)
    c = _open_clock(C)
    t0 = time.time() - 60 * (c.run_minutes + 1)
    (tmp_path / "started.json").write_text(json.dumps({"started_unix": t0}))
    last, hard = cc.clock(c, tmp_path)
    assert last == pytest.approx(t0 + 60 * c.run_minutes) and hard == pytest.approx(t0 + 60 * c.hard_minutes)
    assert cc.run_all(c, tmp_path, dry=False) == [] and calls == []
    assert "clock rule" in (tmp_path / "campaign.log").read_text()
