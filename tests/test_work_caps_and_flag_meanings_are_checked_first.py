"""Numbers that ask for unbounded work, and flags outside their meaning, end in one line and
exit 2 before any work: draws (simulate/sweep --uncertainty, advise --draws and [advise] draws),
simulation runs and advise cells, compare's --seed/--num-boot/--baseline, advise files' unknown
keys and non-finite weights. Property tests draw the values (Hypothesis)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.uncertainty.limits import MAX_DRAWS

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments" / "pr47352.toml")
ADVISE = ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml"
SIM = str(ROOT / "docs" / "data" / "pr47352-sim")
FAST = settings(max_examples=15, deadline=None, database=None)
OUT_OF_RANGE = st.integers(-(2**70), 1) | st.integers(MAX_DRAWS + 1, 2**70)


def _one_line_exit_2(args: list[str], *words: str) -> str:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and r.output.count("\n") == 1, r.output
    for w in words:
        assert w in r.output, r.output
    return r.output


@FAST
@given(n=OUT_OF_RANGE)
def test_draws_outside_the_cap_are_refused_by_every_command(n):
    _one_line_exit_2(["simulate", PR, "--uncertainty", str(n)], "--uncertainty", "4,096")
    _one_line_exit_2(["sweep", PR, "--set", "engine.max_num_seqs=8,16", "--uncertainty", str(n)],
                     "--uncertainty")
    _one_line_exit_2(["advise", str(ADVISE), "--draws", str(n)], "--draws")


def test_draws_times_points_beyond_the_simulation_cap_are_refused():
    values = ",".join(str(v) for v in range(8, 8 + 64))
    _one_line_exit_2(["sweep", PR, "--set", f"engine.max_num_seqs={values}", "--uncertainty",
                      str(MAX_DRAWS)], "simulation runs", "64 points")


@FAST
@given(seed=st.integers(-(2**70), -1) | st.integers(2**63, 2**70),
       boot=st.integers(-(2**40), 99) | st.integers(100_001, 2**62),
       baseline=st.text(min_size=1, max_size=8).filter(
           lambda s: s not in ("fresh", "share", "share_recent", "target_share", "no_mtp")
           and s.isprintable() and not s.startswith("-")))
def test_compare_flags_outside_their_meaning(seed, boot, baseline):
    _one_line_exit_2(["compare", SIM, "--seed", str(seed)], "--seed")
    _one_line_exit_2(["compare", SIM, "--num-boot", str(boot)], "--num-boot")
    _one_line_exit_2(["compare", SIM, "--baseline", baseline], "--baseline")


def test_a_baseline_the_inputs_lack_is_refused_not_dropped():
    _one_line_exit_2(["compare", SIM, "--baseline", "share_recent"], "--baseline", "fresh, share")


@FAST
@given(section=st.sampled_from(["deployment", "workload", "advise"]),
       key=st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
def test_advise_files_refuse_unknown_keys_in_every_table(tmp_path_factory, section, key):
    from mtpsim.uncertainty.advise import KEYS

    if key in KEYS[section]:
        return
    text = ADVISE.read_text().replace(f"[{section}]\n", f"[{section}]\n{key} = 1\n")
    path = tmp_path_factory.mktemp("adv") / "a.toml"
    path.write_text(text)
    _one_line_exit_2(["advise", str(path)], f"{section}.{key}", "unknown key")


@FAST
@given(w=st.sampled_from(["inf", "nan", "-1.0", "1e309"]))
def test_advise_context_weights_must_be_finite(tmp_path_factory, w):
    text = re.sub(r"context_weights = \[[^\]]*\]", f"context_weights = [{w}, 1, 1]",
                  ADVISE.read_text())
    path = tmp_path_factory.mktemp("adv") / "a.toml"
    path.write_text(text)
    _one_line_exit_2(["advise", str(path)], "workload.context_weights")


@FAST
@given(n=st.integers(-(2**62), 1) | st.integers(2, 63) | st.integers(MAX_DRAWS + 1, 2**62))
def test_advise_max_draws_outside_its_range_is_one_line(tmp_path_factory, n):
    """[advise] max_draws and --max-draws: at least the first stage's draws (64 here), at most
    the draws cap; a mistyped cap must not start a stage. (Past 19 digits the file's reader
    refuses the integer itself, in its own line.)"""
    text = ADVISE.read_text().replace("[advise]\n", f"[advise]\nmax_draws = {n}\n")
    path = tmp_path_factory.mktemp("adv") / "a.toml"
    path.write_text(text)
    _one_line_exit_2(["advise", str(path)], "advise.max_draws", "at least [advise] draws")
    want = ("64 draws",) if 2 <= n < 64 else ("4,096",)
    _one_line_exit_2(["advise", str(ADVISE), "--max-draws", str(n)], "--max-draws", *want)


def test_advise_settings_of_the_wrong_kind_are_one_line(tmp_path):
    for bad in ('max_draws = "lots"', "max_draws = 1.5e3", "max_draws = true"):
        path = tmp_path / "a.toml"
        path.write_text(ADVISE.read_text().replace("[advise]\n", f"[advise]\n{bad}\n"))
        _one_line_exit_2(["advise", str(path)], "advise.max_draws")
    path = tmp_path / "b.toml"
    path.write_text(ADVISE.read_text() + "\n[uncertainty]\nmc_se_target = -1\n")
    _one_line_exit_2(["advise", str(path), "--draws", "2", "-j", "1"], "mc_se_target")


def test_a_mix_no_k_can_run_whole_is_one_line(tmp_path):
    text = re.sub(r"context_lengths = \[[^\]]*\]", "context_lengths = [1024, 4096, 9000000]",
                  ADVISE.read_text())
    path = tmp_path / "a.toml"
    path.write_text(text)
    _one_line_exit_2(["advise", str(path), "--draws", "2", "-j", "1"], "workload")


def test_a_sweep_over_list_values_prints_its_table():
    r = CliRunner().invoke(app, ["sweep", PR, "--set", 'policies=["fresh"],["share"]', "--set",
                                 "workload.num_prompts=4"])
    assert r.exit_code == 0, r.output
    assert "2 points x 1 policy" in r.output
    r = CliRunner().invoke(app, ["sweep", PR, "--set", "engine.max_num_seqs=8,16", "--set",
                                 "workload.num_prompts=4", "--json"])
    assert {row["policy"] for row in json.loads(r.stdout)["rows"]} == {"fresh", "share"}
