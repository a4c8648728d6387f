"""`mtpsim simulate experiments/pr47352.toml` answers first, within an 80 x 50 screen: the
share-vs-fresh verdict with its interval (the saved --uncertainty summary of this very spec), the
PR's measured delta beside it, and the single seeded simulation labelled as one run. A spec
changed by --set gets no quoted interval, only the command that makes one."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from mtpsim.cli import app

PR = "experiments/pr47352.toml"


def _screen(*args: str) -> list[str]:
    res = CliRunner().invoke(app, ["simulate", PR, *args], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return res.output.splitlines()[:50]


def test_the_first_screen_has_the_verdict_interval_and_measured_delta():
    first = " ".join(_screen())
    summary = json.loads(open("docs/data/pr47352-uncertainty/summary.json").read())
    iv = summary["summary"]["all measured rows"]["deltas"]["share"]["output_throughput"]
    assert "share vs fresh, output throughput: CANNOT TELL" in first
    assert f"{iv['lo']:+.2f} %".replace("-", "−") in first and f"{iv['hi']:+.2f} %" in first
    assert "measured: +0.66 %" in first
    assert "one seeded run, no interval" in first


def test_a_changed_spec_is_not_quoted_an_old_interval(tmp_path):
    first = " ".join(" ".join(_screen("--set", "workload.num_prompts=64")).split())
    assert "no interval for these settings (a flag or --set changed what the file simulates)" in first
    assert "--uncertainty 64 gives one" in first


def test_a_flag_alone_is_not_blamed_on_set():
    """`simulate --seed 5` (no --set) said '--set changed the spec'."""
    first = " ".join(" ".join(_screen("--seed", "5")).split())
    assert "(a flag or --set changed what the file simulates)" in first and "changed the spec" not in first


def test_a_copied_and_edited_file_is_told_apart_by_its_fingerprint(tmp_path):
    shutil.copytree("docs/data/pr47352-uncertainty", tmp_path / "docs/data/pr47352-uncertainty")
    (tmp_path / "experiments").mkdir()
    text = open(PR).read().replace("num_prompts = 256", "num_prompts = 128")
    assert "num_prompts = 128" in text
    (tmp_path / "experiments/pr47352.toml").write_text(text)
    res2 = CliRunner().invoke(app, ["simulate", str(tmp_path / "experiments/pr47352.toml")],
                              env={"COLUMNS": "80"})
    assert "was made from other settings" in " ".join(res2.output.split())


def _copied(tmp_path, edit):
    shutil.copytree("docs/data/pr47352-uncertainty", tmp_path / "docs/data/pr47352-uncertainty")
    (tmp_path / "experiments").mkdir()
    path = tmp_path / "experiments/pr47352.toml"
    path.write_text(edit(open(PR).read()))
    res = CliRunner().invoke(app, ["simulate", str(path)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split()), tmp_path / "docs/data/pr47352-uncertainty/summary.json"


def test_a_comment_whitespace_or_description_edit_keeps_the_interval(tmp_path):
    def edit(text):
        old = next(line for line in text.splitlines() if line.startswith("description"))
        return "# my copy\n\n" + text.replace(old, 'description  =  "my renamed copy"  # why')
    first, _ = _copied(tmp_path, edit)
    assert "share vs fresh, output throughput: CANNOT TELL" in first
    assert "made from other settings" not in first


def test_a_summary_made_before_content_fingerprints_is_read_by_the_file_bytes(tmp_path):
    first, summary = _copied(tmp_path, lambda text: text)
    obj = json.loads(summary.read_text())
    import hashlib
    obj.pop("spec_content_sha256")
    obj["spec_sha256"] = hashlib.sha256(open(PR, "rb").read()).hexdigest()
    summary.write_text(json.dumps(obj))
    res = CliRunner().invoke(app, ["simulate", str(tmp_path / "experiments/pr47352.toml")],
                             env={"COLUMNS": "80"})
    assert "CANNOT TELL" in res.output, res.output
    summary.write_text("[1, 2]")
    res = CliRunner().invoke(app, ["simulate", str(tmp_path / "experiments/pr47352.toml")],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "was made from other settings" in " ".join(res.output.split())


def test_expected_acceptance_is_not_called_a_seeded_run():
    """--expected computes acceptance without draws: the title said '(simulated, seed 0)' and the
    headline 'one seeded run'."""
    text = " ".join(" ".join(_screen("--expected")).split())
    assert "one run at expected acceptance, no interval" in text and "one seeded run" not in text
