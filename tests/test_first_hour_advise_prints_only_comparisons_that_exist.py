"""`mtpsim advise` on a deployment that runs fresh alone (`[advise] policies = ["fresh"]`, the
default for a dense model such as DeepSeek-V3) prints no share vs fresh columns and no legend
for them: it used to print a "share vs fresh, same k / MC SE / P(>+R) / verdict" table of empty
rows. `--plot` (share vs fresh per k) on such a deployment is one line before any draw: it used
to end in a KeyError traceback after every cell had run."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENT = (ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml").read_text()


def _deployment(tmp_path: Path, policies: str) -> Path:
    text = (DEPLOYMENT.replace('policies = ["fresh", "share"]', f"policies = {policies}")
            .replace("k = [1, 2, 3, 4, 5]", "k = [1, 3]")
            .replace("context_lengths = [1024, 4096, 16384]", "context_lengths = [1024]")
            .replace("context_weights = [0.4, 0.4, 0.2]", "context_weights = [1.0]"))
    assert f"policies = {policies}" in text and "k = [1, 3]" in text
    f = tmp_path / "deploy.toml"
    f.write_text(text)
    return f


def _advise(tmp_path: Path, f: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", "advise", str(f), "-j", "1", "--draws", "16",
                           "--point-dir", str(tmp_path / "points"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**__import__("os").environ, "COLUMNS": "200"})


@pytest.mark.parametrize("policies, shown", [('["fresh"]', False), ('["fresh", "share"]', True)])
def test_share_vs_fresh_columns_and_legend_only_where_share_runs(tmp_path, policies, shown):
    r = _advise(tmp_path, _deployment(tmp_path, policies))
    assert r.returncode == 0, r.stderr
    for text in ("share vs fresh, same k", "MC SE (eff.)", "P(>+R)", "share beats fresh"):
        assert (text in r.stdout) == shown, (text, r.stdout)
    assert "gain vs best fresh" in r.stdout and "how to read:" in r.stdout


def test_plot_of_a_fresh_only_deployment_is_one_line_before_any_draw(tmp_path):
    f = _deployment(tmp_path, '["fresh"]')
    r = _advise(tmp_path, f, "--plot", str(tmp_path / "plots"))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == [f"error: --plot: draws share vs fresh, but {f}'s [advise] "
                                     "policies are fresh alone: add share there or drop --plot"], r.stderr
    assert r.stdout == "" and not (tmp_path / "plots").exists()


def test_a_deployment_of_k_0_alone_names_advise_k(tmp_path):
    f = tmp_path / "deploy.toml"
    f.write_text(DEPLOYMENT.replace("k = [1, 2, 3, 4, 5]", "k = [0]"))
    r = _advise(tmp_path, f)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == [f"error: {f}: advise.k: expected at least one k >= 1 (k = 0, "
                                     "plain decoding, is the baseline the gains are taken against), "
                                     "got [0]"], r.stderr
