"""The v15 campaign's registered design (docs/uncertainty.md, "The v15 campaign"): v14's procedure
in the shared driver (benchmarks/campaign_common.py), 12 configurations never run in v7-v14, inside
and outside alternating, every round whole batches, three of them sized by power (one request a
round, many rounds); v14's four calibration kinds with new seeds; nothing starts after the clock
limits; the penalty comparison pools the `share` traces of every configuration, each event priced
at its own trace's k. No test here reads the wall clock's date: the registered UTC limits bound
the campaign's own run, and each test sets the clock it asks about."""

from __future__ import annotations

import dataclasses
import gzip
import shutil
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_common as cc  # noqa: E402
import campaign_v14 as v14  # noqa: E402
import campaign_v15 as v15  # noqa: E402
from _campaign_power import power_rows  # noqa: E402

from mtpsim.spec import load_experiment  # noqa: E402

C = v15.CAMPAIGN
EARLIER = ROOT / "experiments" / "heldout"
V14_DATA = ROOT / "docs" / "data" / "heldout-v14"


def _shape(path: Path) -> tuple:
    e = load_experiment(str(path))
    w = e.workload
    return (e.k, e.index_topk, w.input_len, w.input_len_distribution, w.max_concurrency)


def test_the_configurations_are_the_specs_alternate_and_were_never_run_in_v7_to_v14():
    specs = {p.stem for p in C.exp.glob("*.toml")} - set(C.kinds)
    assert set(C.configs) == specs and len(C.configs) == 12
    assert [n.split("-")[0] for n in C.configs] == ["in", "out"] * 6
    later = {"v15", "v16"}  # v15 and the campaigns after it
    before = [p for p in EARLIER.rglob("*.toml") if not later & set(p.parts) and "calibrate" not in p.stem]
    assert any("v14" in p.parts for p in before) and any("v7" in p.stem or "v8" in p.stem for p in before)
    assert not {p.stem for p in before} & set(C.configs)
    old = {_shape(p) for p in before}
    assert not [n for n in C.configs if _shape(C.exp / f"{n}.toml") in old]
    seeds = [tomllib.loads((C.exp / f"{n}.toml").read_text())["seed"] for n in C.configs]
    assert seeds == list(range(1501, 1513))


def test_the_kinds_are_v14s_unchanged_but_for_their_seeds():
    assert C.kinds == v14.KINDS
    for i, kind in enumerate(C.kinds):
        a = tomllib.loads((v14.EXP / f"{kind}.toml").read_text())
        b = tomllib.loads((C.exp / f"{kind}.toml").read_text())
        assert b.pop("seed") == 221 + i and a.pop("seed") == 201 + i
        a.pop("description"), b.pop("description")
        assert a == b, kind
    used = (set(range(131, 143)) | set(range(161, 173)) | set(range(181, 193)) | set(range(201, 213))
            | set(range(1301, 1313)) | set(range(1401, 1413)))
    assert not set(range(C.slice_seed, C.slice_seed + 12)) & used


def test_every_round_is_whole_batches_and_the_powered_ones_serve_one_request_a_round():
    powered = []
    for name in C.configs:
        w = tomllib.loads((C.exp / f"{name}.toml").read_text())["workload"]
        n, conc, rounds = w["num_prompts"], w["max_concurrency"], w["rounds"]
        assert rounds >= 2 and n % rounds == 0 and (n // rounds) % conc == 0, name
        if conc == 1 and rounds == n >= 32:
            powered.append(name)
    assert len(powered) >= 3
    assert max(C.configs.index(n) for n in powered) < 6  # early: the clock rule cannot reach them


def test_the_registered_limits_are_45_and_52_minutes_and_seven_minutes_apart_in_utc():
    assert (C.run_minutes, C.hard_minutes) == (45, 52)
    assert C.hard_stop_utc - C.last_start_utc == timedelta(minutes=7)
    assert C.penalty_configs == "all" and C.indexer_keys in ("own", "padded")


def _v14_share_traces(tmp_path: Path, names) -> list:
    from mtpsim.trace import read_trace

    out = []
    for name in names:
        for gz in sorted((V14_DATA / name / "real" / "rounds").glob("r*/share.trace.jsonl.gz")):
            dst = tmp_path / name / gz.parent.name / "share.trace.jsonl"
            dst.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(gz, "rb") as f, open(dst, "wb") as g:
                shutil.copyfileobj(f, g)
            out.append(read_trace(dst))
    return out


def test_the_pooled_comparison_is_v11s_on_one_k_and_prices_each_event_at_its_own_k(tmp_path):
    from penalty_log_score import compare

    from mtpsim.calibration.schema import read_calibration

    cal = read_calibration(V14_DATA / "calibration-bootstrap.json")
    k4 = _v14_share_traces(tmp_path, ["in-k4-ctx550-conc3"])
    k2 = _v14_share_traces(tmp_path, ["out-k2-top48-ctx1100-conc3"])
    a, b = compare(cal, k4, 200), cc.compare_pooled(cal, k4, 200)
    assert b["events"] == a["events"] and b["forms"] == {f: {"all": v["all"]} for f, v in a["forms"].items()}
    both = cc.penalty_events(cal, k4 + k2, ("kappa_lk",))
    one = [cc.penalty_events(cal, t, ("kappa_lk",)) for t in (k4, k2)]
    # grouped by k, ascending: the k = 2 events first, each priced as its own k alone prices it
    assert both[1]["kappa_lk"].tolist() == one[1][1]["kappa_lk"].tolist() + one[0][1]["kappa_lk"].tolist()
    assert len(set(both[0].tolist())) == len(set(one[0][0].tolist())) + len(set(one[1][0].tolist()))


def test_the_penalty_pools_every_configuration_not_only_the_inside_ones(tmp_path, monkeypatch):
    for name in C.configs[:4]:
        (tmp_path / name / "real").mkdir(parents=True)
        (tmp_path / name / "real" / "share.trace.jsonl").write_text("")
    seen = {}

    def fake_compare(cal, traces, boot=1000, seed=0):
        seen["n"] = len(traces)
        return {"events": 1, "forms": {"kappa_lk": {"all": {"mean": 0.1, "ci95": [0.05, 0.2]}}}}

    import mtpsim.calibration.schema
    import mtpsim.trace

    monkeypatch.setattr(cc, "compare_pooled", fake_compare)
    monkeypatch.setattr(mtpsim.trace, "read_trace", lambda p: p)
    monkeypatch.setattr(mtpsim.calibration.schema, "read_calibration", lambda p: None)
    monkeypatch.setattr("mtpsim.fileio.atomic_write_json", lambda p, x: None)
    res = cc.penalty(C, tmp_path)
    assert seen["n"] == 4 and res["verdict"]["winner"] == "kappa_lk" and res["pooled"] == "all"
    res = cc.penalty(dataclasses.replace(C, penalty_configs="inside"), tmp_path)
    assert seen["n"] == 2


def test_the_shipped_power_figures_are_for_these_configurations_as_sized():
    _, rows = power_rows(C, "heldout-v15-power")
    testable = [(n, m) for n, r in rows.items() for m, d in r["deltas"].items() if d["testable_expected"]]
    assert testable and {n for n, _ in testable} <= {n for n in C.configs if rows[n]["rounds"] >= 32}
