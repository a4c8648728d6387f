"""`mtpsim advise --draws / --max-draws`: the first stage is the draws rounded up to R replicates
x a power of two (R = 16, or the draws below 16), as --help says with its own examples; no stage
passes --max-draws (one below the rounded first stage is refused, one line, exit 2); and the
Monte Carlo line names what stopped the stages. --draws 20 --max-draws 20 used to run 32 and
call 32 "the --max-draws cap"; --draws 2 alone blamed a cap of 256 it never reached."""

import json
import re

import numpy as np
import pytest
from _advise_files import deployment  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.uncertainty import advise as A

DEP = deployment("k = [2]", rest="[uncertainty]\nmc_se_target = 1e-6\n")


@pytest.fixture
def dep(monkeypatch, tmp_path):
    """No simulation: share is fresh x (1 + e / 100), e ~ N(0, 1) per draw (a target of 1e-6 is
    never met, so the stages run to the cap)."""
    def run(exps, tasks, jobs):
        for cell, d in tasks:
            e = np.random.default_rng(d.seed).normal()
            fresh = {"output_throughput": 100.0, "median_tpot_ms": 10.0, A.AL: 2.0}
            share = {"output_throughput": 100.0 * (1 + e / 100), "median_tpot_ms": 10.0, A.AL: 2.0}
            plain = {"output_throughput": 80.0, "median_tpot_ms": 12.5, A.AL: 1.0}
            yield cell, d.index, ({"no_mtp": plain} if cell[0] == 0 else {"fresh": fresh, "share": share})

    monkeypatch.setattr(A, "_run", run)
    monkeypatch.setattr(A.Spread, "of", classmethod(lambda cls, *a, **k: cls(0.0, 0.0, 0.0)))
    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    return p


def _run(dep, *flags):
    res = CliRunner().invoke(app, ["advise", str(dep), "-j", "1", "--point-dir", str(dep.parent / "p"),
                                   "--json", *flags])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_the_helps_rounding_examples_are_what_runs(dep):
    text = " ".join(CliRunner().invoke(app, ["advise", "--help"], env={"COLUMNS": "300"}).stdout.split())
    examples = re.findall(r"(\d+) runs (\d+)", text)
    assert len(examples) >= 2 and any(a == b for a, b in examples) and any(a != b for a, b in examples)
    for asked, runs in examples:
        assert _run(dep, "--draws", asked)["sampler"]["stages"] == [int(runs)]


@pytest.mark.parametrize("draws, cap, stages", [
    ("20", "40", [32]), ("20", "64", [32, 64]), ("3", "12", [3, 6, 12]), ("3", "11", [3, 6]),
    ("16", "100", [16, 32, 64]), ("64", "64", [64]),
])
def test_no_stage_passes_max_draws_and_the_line_says_why_it_stopped(dep, draws, cap, stages):
    out = _run(dep, "--draws", draws, "--max-draws", cap)
    assert out["sampler"]["stages"] == stages and out["draws"] <= int(cap)
    line = next(v for v in out["verdict"] if v.startswith("Monte Carlo:"))
    assert (f"not met at {stages[-1]:,} draws (the next stage's {2 * stages[-1]:,} would pass "
            f"--max-draws {int(cap):,})") in line


def test_draws_alone_is_one_stage_and_says_so_not_a_cap(dep):
    out = _run(dep, "--draws", "2")
    assert out["sampler"]["stages"] == [2]
    line = next(v for v in out["verdict"] if v.startswith("Monte Carlo:"))
    assert "--max-draws cap" not in line
    assert "not met at 2 draws (--draws without --max-draws, one stage: add --max-draws" in line


@pytest.mark.parametrize("draws, cap", [("20", "20"), ("20", "31"), ("17", "24")])
def test_a_max_draws_below_the_rounded_first_stage_is_refused(dep, draws, cap):
    res = CliRunner().invoke(app, ["advise", str(dep), "-j", "1", "--draws", draws, "--max-draws", cap,
                                   "--point-dir", str(dep.parent / "p")], env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (f"error: --max-draws: expected at least the first stage's 32 draws "
                                  f"(--draws or [advise] draws {draws}, run as 32 (16 replicates x 2)), "
                                  f"got {cap}")


def test_the_files_max_draws_below_the_rounded_first_stage_is_refused(dep):
    dep.write_text(DEP.replace("k = [2]", "k = [2]\ndraws = 20\nmax_draws = 24"))
    res = CliRunner().invoke(app, ["advise", str(dep), "-j", "1", "--point-dir", str(dep.parent / "p")],
                             env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (f"error: {dep}: advise.max_draws: expected an integer in 32..4096 "
                                  "(at least [advise] draws 20, run as 32 (16 replicates x 2)), got 24")
