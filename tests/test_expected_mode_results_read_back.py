"""A result the simulator writes in expected-value mode reads back: per-request accepted tokens
are whole counts per position whose sum is the request's total (rounding each apart once wrote
files that `mtpsim compare` refused)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.result import load_result

ROOT = Path(__file__).resolve().parents[1]


def test_expected_mode_records_are_consistent_counts(tmp_path: Path):
    out = tmp_path / "sim"
    res = CliRunner().invoke(app, [
        "simulate", str(ROOT / "experiments" / "long-context" / "ctx8k.toml"),
        "--set", 'acceptance.mode="expected"', "--set", "workload.num_prompts=4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for policy in ("fresh", "share"):
        result = load_result(out / f"{policy}.json")  # the reader checks the identity
        assert result.requests and all(
            sum(r.accepted_per_pos) == r.num_accepted_tokens for r in result.requests)
        assert any(r.num_accepted_tokens > 0 for r in result.requests)
