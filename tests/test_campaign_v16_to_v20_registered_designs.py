"""The v16-v20 campaigns' registered designs (docs/uncertainty.md, "The v16 campaign" ... "The
v20 campaign"): the previous campaign's procedure in the shared driver
(benchmarks/campaign_common.py), 12 configurations never run in any earlier campaign, inside and
outside alternating, every round whole batches, the inside ones large (v16: >= 32 requests a
policy, v17 and v18: >= 48, v19 and v20: >= 96), three Poisson streams among them; the previous
campaign's four calibration kinds with new seeds; the declared penalty and request draw; nothing
starts after the clock limits; the padded indexer keys reach the fit; the predictions of v18-v20
paired (both policies of a draw on one seed), the earlier ones unpaired. No test here reads the
wall clock's date: the registered UTC limits bound the campaign's own run, and each test sets the
clock it asks about."""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_common as cc  # noqa: E402
import campaign_v11 as v11  # noqa: E402
import campaign_v15 as v15  # noqa: E402
import campaign_v16 as v16  # noqa: E402
import campaign_v17 as v17  # noqa: E402
import campaign_v18 as v18  # noqa: E402
import campaign_v19 as v19  # noqa: E402
import campaign_v20 as v20  # noqa: E402
from _campaign_power import power_rows  # noqa: E402

from mtpsim.spec import load_experiment  # noqa: E402

EARLIER = ROOT / "experiments" / "heldout"
SEEDS_BEFORE_V16 = (set(range(131, 143)) | set(range(161, 173)) | set(range(181, 193)) | set(range(201, 213))
                    | set(range(221, 233)) | set(range(1301, 1313)) | set(range(1401, 1413))
                    | set(range(1501, 1513)))


@dataclass(frozen=True)
class Design:
    """What one registration fixed, beside its Campaign."""

    c: cc.Campaign
    previous: cc.Campaign
    first_seed: int  # configurations' seeds first_seed .. first_seed + 11
    used_seeds: frozenset  # every seed run before it
    min_inside: int  # requests a policy inside the range
    minutes: tuple[float, float]
    acceptance: tuple[str, str]  # (penalty, request_draw) every configuration names
    power: str  # docs/data folder of the power figures
    paired: bool = False  # the predictions: both policies of a draw on one seed (v18 on)


DESIGNS = {
    "v16": Design(v16.CAMPAIGN, v15.CAMPAIGN, 1601, frozenset(SEEDS_BEFORE_V16), 32, (55, 62),
                  ("none", "stratified"), "heldout-v16-power"),
    "v17": Design(v17.CAMPAIGN, v16.CAMPAIGN, 1701,
                  frozenset(SEEDS_BEFORE_V16 | set(range(241, 253)) | set(range(1601, 1613))), 48, (60, 67),
                  ("kappa_lk", "independent"), "heldout-v17-power"),
    "v18": Design(v18.CAMPAIGN, v17.CAMPAIGN, 1801,
                  frozenset(SEEDS_BEFORE_V16 | set(range(241, 253)) | set(range(1601, 1613))
                            | set(range(261, 273)) | set(range(1701, 1713))), 48, (60, 67),
                  ("kappa_lk", "independent"), "heldout-v18-power", paired=True),
    "v19": Design(v19.CAMPAIGN, v18.CAMPAIGN, 1901,
                  frozenset(SEEDS_BEFORE_V16 | set(range(241, 253)) | set(range(1601, 1613))
                            | set(range(261, 273)) | set(range(1701, 1713))
                            | set(range(281, 293)) | set(range(1801, 1813))), 96, (66, 73),
                  ("kappa_lk", "independent"), "heldout-v19-power", paired=True),
    "v20": Design(v20.CAMPAIGN, v19.CAMPAIGN, 2001,
                  frozenset(SEEDS_BEFORE_V16 | set(range(241, 253)) | set(range(1601, 1613))
                            | set(range(261, 273)) | set(range(1701, 1713))
                            | set(range(281, 293)) | set(range(1801, 1813))
                            | set(range(301, 313)) | set(range(1901, 1913))), 96, (66, 73),
                  ("kappa_lk", "independent"), "heldout-v20-power", paired=True),
}
EACH = pytest.mark.parametrize("d", list(DESIGNS.values()), ids=list(DESIGNS))


def _shape(path: Path) -> tuple:
    e = load_experiment(str(path))
    w = e.workload
    return (e.k, e.index_topk, w.input_len, w.input_len_distribution, w.max_concurrency)


@EACH
def test_the_configurations_are_the_specs_alternate_and_were_never_run_before(d):
    C = d.c
    specs = {p.stem for p in C.exp.glob("*.toml")} - set(C.kinds)
    assert set(C.configs) == specs and len(C.configs) == 12
    assert [n.split("-")[0] for n in C.configs] == ["in", "out"] * 6
    names = sorted(DESIGNS)
    later = set(names[names.index(C.name):])  # this campaign and the ones after it
    before = [p for p in EARLIER.rglob("*.toml") if not later & set(p.parts) and "calibrate" not in p.stem]
    assert any(d.previous.name in p.parts for p in before)
    assert any("v7" in p.stem or "v8" in p.stem for p in before)
    assert not {p.stem for p in before} & set(C.configs)
    old = {_shape(p) for p in before}
    assert not [n for n in C.configs if _shape(C.exp / f"{n}.toml") in old]
    seeds = [tomllib.loads((C.exp / f"{n}.toml").read_text())["seed"] for n in C.configs]
    assert seeds == list(range(d.first_seed, d.first_seed + 12))


@EACH
def test_the_kinds_are_the_previous_campaigns_unchanged_but_for_their_seeds(d):
    C, P = d.c, d.previous
    assert C.kinds == P.kinds
    for i, kind in enumerate(C.kinds):
        a = tomllib.loads((P.exp / f"{kind}.toml").read_text())
        b = tomllib.loads((C.exp / f"{kind}.toml").read_text())
        assert b.pop("seed") == C.slice_seed + i and a.pop("seed") == P.slice_seed + i
        a.pop("description"), b.pop("description")
        assert a == b, kind
    assert not set(range(C.slice_seed, C.slice_seed + 12)) & d.used_seeds


@EACH
def test_every_round_is_whole_batches_inside_ones_are_large_and_three_are_streams(d):
    C = d.c
    streams = []
    for name in C.configs:
        w = tomllib.loads((C.exp / f"{name}.toml").read_text())["workload"]
        n, conc, rounds = w["num_prompts"], w["max_concurrency"], w["rounds"]
        assert rounds >= 2 and n % rounds == 0 and (n // rounds) % conc == 0, name
        if name.startswith("in-"):
            assert n >= d.min_inside, name  # the acceptance-length width
        if w["request_rate"] != float("inf"):
            streams.append(name)
            assert "stream" in name
    assert len(streams) == 3 and sum(n.startswith("in-") for n in streams) == 1


@EACH
def test_the_registered_limits_are_seven_minutes_apart_and_keys_padded(d):
    C = d.c
    assert (C.run_minutes, C.hard_minutes) == d.minutes
    assert C.hard_stop_utc - C.last_start_utc == timedelta(minutes=7)
    assert C.penalty_configs == "all" and C.indexer_keys == "padded"  # v15's declared change, kept


@EACH
def test_every_configuration_declares_its_model_and_the_kinds_do_not_care(d):
    C = d.c
    for name in C.configs:
        a = load_experiment(str(C.exp / f"{name}.toml")).acceptance
        assert (a.penalty, a.request_draw) == d.acceptance, name
    # the kinds only feed the fit, which fits every form whatever the spec names
    assert all("penalty" not in tomllib.loads((C.exp / f"{k}.toml").read_text()).get("acceptance", {})
               for k in C.kinds)


@EACH
def test_the_shipped_power_figures_are_for_these_configurations_as_sized(d):
    _, rows = power_rows(d.c, d.power)
    if d.acceptance[0] == "none":  # the zero penalty: no acceptance-length delta is testable
        al = "spec_decode_acceptance_length"
        assert not any(r["deltas"][al]["testable_expected"] for r in rows.values())


@EACH
def test_the_predictions_are_paired_as_registered(d, tmp_path, monkeypatch):
    """v11.predict hands the registered pairing to the propagation (v18 paired, v16-v17 unpaired), and
    the power script predicts the same way; a paired prediction says so in its file."""
    assert d.c.paired_predictions is d.paired
    import mtpsim.uncertainty.run as urun

    seen = []

    class Run:
        values = [{p: {m: 1.0 for m in v11.METRICS} for p in v11.POLICIES}] * 3
        extrapolation = type("X", (), {"flagged": False, "notes": ()})()

    def fake(spec, sets, draws, workers):
        seen.append(sets)
        return Run()

    monkeypatch.setattr(urun, "propagate", fake)
    (tmp_path / "calibration-bootstrap.json").write_text("{}")
    pred = v11.predict(tmp_path, d.c.configs[0], d.c.exp, d.c.paired_predictions)
    assert seen[0][-1] == f"uncertainty.paired={'true' if d.paired else 'false'}"
    assert pred.get("paired", False) is d.paired
    if d.paired:
        power = json.loads((ROOT / "docs" / "data" / d.power / "power.json").read_text())
        assert power["paired_predictions"] is True
