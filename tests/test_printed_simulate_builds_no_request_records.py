"""A printed `mtpsim simulate` (no --out, --json or --plot) simulates without per-request
records or the spec's copy in its results: its tables read metrics only, and building the
records was ~a quarter of the simulation's time (docs/speed.md, round 9). The metrics are the
same either way, and a run that writes its results still carries the records."""

from __future__ import annotations

from pathlib import Path

from mtpsim.runs.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
EXP = str(ROOT / "experiments" / "pr47352.toml")
SMALL = ["workload.num_prompts=16", "workload.output_len=64"]


def test_metrics_are_the_same_with_or_without_records():
    full = simulate(EXP, SMALL)
    bare = simulate(EXP, SMALL, records=False)
    assert list(bare.results) == list(full.results)
    for name, res in full.results.items():
        assert res.requests and res.spec
        assert bare.results[name].requests is None and bare.results[name].spec == {}
        assert bare.results[name].metrics == res.metrics
        assert bare.results[name].phases == res.phases
        assert bare.results[name].extra == res.extra


def test_the_command_keeps_records_where_it_writes_them(monkeypatch, tmp_path):
    import mtpsim.runs.simulate as runs
    from mtpsim.commands.simulate import simulate as command

    seen: list[bool] = []
    real = runs.simulate

    def spy(*a, records: bool = True, **k):
        seen.append(records)
        return real(*a, records=records, **k)

    monkeypatch.setattr(runs, "simulate", spy)
    sets = [f"{s}" for s in SMALL]
    command(Path(EXP), set_=sets)
    command(Path(EXP), set_=sets, as_json=True)
    command(Path(EXP), set_=sets, out=tmp_path / "out")
    assert seen == [False, True, True]
    assert all(p.exists() for p in (tmp_path / "out" / "fresh.json", tmp_path / "out" / "share.json"))
