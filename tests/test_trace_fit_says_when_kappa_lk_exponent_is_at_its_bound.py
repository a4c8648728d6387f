"""`simulate --trace` under penalty kappa_lk says so when the fit's L/K exponent sits at its bound
(traces of one narrow L/K range cannot pin it, and at another L/K the penalty is extrapolated
from it: a v10 round at L/K ~41 priced at the spec's ~12 had gamma at -5 and no penalty left);
under kappa_step, which has no exponent, nothing is said."""

import gzip
from pathlib import Path

from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]
ROUND = ROOT / "docs/data/heldout-v10/out-k4-ctx2600-conc2/real/rounds/r03"


def _simulate(tmp_path: Path, penalty: str) -> str:
    traces = []
    for p in ("fresh", "share"):
        t = tmp_path / f"{p}.trace.jsonl"
        t.write_bytes(gzip.decompress((ROUND / f"{p}.trace.jsonl.gz").read_bytes()))
        traces += ["--trace", str(t)]
    res = CliRunner().invoke(app, ["simulate", str(ROOT / "experiments/reference-cpu.toml"), *traces,
                                   "--set", f'acceptance.penalty="{penalty}"', "--json"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_kappa_lk_at_its_bound_is_said(tmp_path):
    import json

    out = json.loads(_simulate(tmp_path, "kappa_lk"))
    notes = [n for n in out["notes"] if n.startswith("penalty kappa_lk")]
    assert len(notes) == 1 and "at its bound (-5.0" in notes[0] and "L/K (~12.0)" in notes[0]


def test_kappa_step_says_nothing_of_it(tmp_path):
    import json

    out = json.loads(_simulate(tmp_path, "kappa_step"))
    assert not [n for n in out["notes"] if "kappa_lk" in n]
