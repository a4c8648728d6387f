"""The v12 campaign's registered design (docs/uncertainty.md §13): 12 new configurations, inside
and outside alternating, each round whole batches; calibration slice i runs right before
configuration i, with its own seed and the policy order alternating by slice."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v12 as v12  # noqa: E402

from mtpsim.rounds import auto_rounds  # noqa: E402


def test_the_registered_configurations_are_the_specs_and_alternate_inside_outside():
    specs = {p.stem for p in v12.EXP.glob("*.toml")} - {"calibrate"}
    assert set(v12.CONFIGS) == specs and len(v12.CONFIGS) == 12
    assert [n.split("-")[0] for n in v12.CONFIGS] == ["in", "out"] * 6


def test_every_round_is_whole_batches_as_run_real_picks_them():
    for name in v12.CONFIGS:
        w = tomllib.loads((v12.EXP / f"{name}.toml").read_text())["workload"]
        n, conc, rounds = w["num_prompts"], w["max_concurrency"], w["rounds"]
        assert rounds == auto_rounds(n, conc), name
        assert n % rounds == 0 and (n // rounds) % conc == 0, name


def test_slices_and_configurations_run_interleaved_in_the_registered_order(tmp_path, monkeypatch):
    calls: list[list[str]] = []

    def fake(args, deadline):  # a run that finishes: its result files appear
        calls.append(args)
        out = Path(args[args.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for p in v12.POLICIES:
            (out / f"{p}.json").write_text("{}")
        return True

    monkeypatch.setattr(v12, "mtpsim", fake)
    for i, name in enumerate(v12.CONFIGS[:4]):
        assert v12.run_slice(tmp_path, i, dry=False) and v12.run_config(tmp_path, name, dry=False)
    assert [Path(c[1]).stem for c in calls] == ["calibrate", v12.CONFIGS[0], "calibrate", v12.CONFIGS[1],
                                                 "calibrate", v12.CONFIGS[2], "calibrate", v12.CONFIGS[3]]
    slices = calls[::2]
    assert [c[c.index("--seed") + 1] for c in slices] == ["121", "122", "123", "124"]
    orders = [[c[j + 1] for j, a in enumerate(c) if a == "-p"] for c in slices]
    assert orders == [["fresh", "share"], ["share", "fresh"]] * 2
    assert v12.run_slice(tmp_path, 0, dry=False) and len(calls) == 8  # finished: not run again
