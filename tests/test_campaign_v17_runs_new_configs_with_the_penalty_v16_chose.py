"""The v17 campaign's registered design (docs/uncertainty.md, "The v17 campaign"): v16's procedure
in the shared driver (benchmarks/campaign_common.py), 12 configurations never run in v7-v16, inside
and outside alternating, every round whole batches, the inside ones serving at least 48 requests a
policy, three Poisson streams among them; v16's four calibration kinds with new seeds; nothing starts
after the clock limits; the padded indexer keys reach the fit. No test here reads the wall clock's
date: the registered UTC limits bound the campaign's own run, and each test sets the clock it asks
about."""

from __future__ import annotations

import json
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v16 as v16  # noqa: E402
import campaign_v17 as v17  # noqa: E402

from mtpsim.spec import load_experiment  # noqa: E402

C = v17.CAMPAIGN
EARLIER = ROOT / "experiments" / "heldout"


def _shape(path: Path) -> tuple:
    e = load_experiment(str(path))
    w = e.workload
    return (e.k, e.index_topk, w.input_len, w.input_len_distribution, w.max_concurrency)


def test_the_configurations_are_the_specs_alternate_and_were_never_run_in_v7_to_v16():
    specs = {p.stem for p in C.exp.glob("*.toml")} - set(C.kinds)
    assert set(C.configs) == specs and len(C.configs) == 12
    assert [n.split("-")[0] for n in C.configs] == ["in", "out"] * 6
    later = {"v17"}  # v17 and the campaigns after it
    before = [p for p in EARLIER.rglob("*.toml") if not later & set(p.parts) and "calibrate" not in p.stem]
    assert any("v16" in p.parts for p in before) and any("v7" in p.stem or "v8" in p.stem for p in before)
    assert not {p.stem for p in before} & set(C.configs)
    old = {_shape(p) for p in before}
    assert not [n for n in C.configs if _shape(C.exp / f"{n}.toml") in old]
    seeds = [tomllib.loads((C.exp / f"{n}.toml").read_text())["seed"] for n in C.configs]
    assert seeds == list(range(1701, 1713))


def test_the_kinds_are_v16s_unchanged_but_for_their_seeds():
    assert C.kinds == v16.CAMPAIGN.kinds
    for i, kind in enumerate(C.kinds):
        a = tomllib.loads((v16.CAMPAIGN.exp / f"{kind}.toml").read_text())
        b = tomllib.loads((C.exp / f"{kind}.toml").read_text())
        assert b.pop("seed") == 261 + i and a.pop("seed") == 241 + i
        a.pop("description"), b.pop("description")
        assert a == b, kind
    used = (set(range(131, 143)) | set(range(161, 173)) | set(range(181, 193)) | set(range(201, 213))
            | set(range(221, 233)) | set(range(1301, 1313)) | set(range(1401, 1413))
            | set(range(241, 253)) | set(range(1501, 1513)) | set(range(1601, 1613)))
    assert not set(range(C.slice_seed, C.slice_seed + 12)) & used


def test_every_round_is_whole_batches_inside_ones_are_large_and_three_are_streams():
    streams = []
    for name in C.configs:
        w = tomllib.loads((C.exp / f"{name}.toml").read_text())["workload"]
        n, conc, rounds = w["num_prompts"], w["max_concurrency"], w["rounds"]
        assert rounds >= 2 and n % rounds == 0 and (n // rounds) % conc == 0, name
        if name.startswith("in-"):
            assert n >= 48, name  # the acceptance-length width under the independent request draw
        if w["request_rate"] != float("inf"):
            streams.append(name)
            assert "stream" in name
    assert len(streams) == 3 and sum(n.startswith("in-") for n in streams) == 1


def test_the_registered_limits_are_60_and_67_minutes_seven_apart_and_keys_padded():
    assert (C.run_minutes, C.hard_minutes) == (60, 67)
    assert C.hard_stop_utc - C.last_start_utc == timedelta(minutes=7)
    assert C.penalty_configs == "all" and C.indexer_keys == "padded"  # v15's declared change, kept


def test_every_configuration_declares_kappa_lk_and_the_kinds_do_not_care():
    for name in C.configs:  # v16's registered pooled comparison picked kappa_lk
        a = load_experiment(str(C.exp / f"{name}.toml")).acceptance
        assert (a.penalty, a.request_draw) == ("kappa_lk", "independent"), name  # §23's declared draw
    # the kinds only feed the fit, which fits every form whatever the spec names
    assert all("penalty" not in tomllib.loads((C.exp / f"{k}.toml").read_text()).get("acceptance", {})
               for k in C.kinds)


def test_the_shipped_power_figures_are_for_these_configurations_as_sized():
    power = json.loads((ROOT / "docs" / "data" / "heldout-v17-power" / "power.json").read_text())
    rows = {r["config"]: r for r in power["configs"]}
    assert list(rows) == list(C.configs)
    for name, r in rows.items():
        w = load_experiment(str(C.exp / f"{name}.toml")).workload
        assert (r["requests"], r["rounds"]) == (w.num_prompts, w.rounds), name  # resized: rerun the script
        assert r["inside"] == name.startswith("in-"), name
    assert power["minutes"]["total"] <= C.run_minutes
