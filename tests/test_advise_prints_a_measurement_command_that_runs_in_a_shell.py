"""The measurement `mtpsim advise` prints for a "cannot tell" (and `--json`'s
`cannot_tell.command`) is pasted into a shell. The draft-step timing one read `--out runs/ab-1
(and runs/ab-2, runs/ab-3) && mtpsim compare runs/ab-1/...`: a bash syntax error, and it compared
the first repeat only. Every command is valid shell, one `mtpsim` command a line, and the
repeats are each run and compared."""

import json
import shutil
import subprocess

import pytest
from _advise_files import deployment, known_advice  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.report.fit import COMMAND
from mtpsim.uncertainty.sensitivity import GROUPS, command_for

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="no bash to parse the command with")


def _parses(cmd: str) -> None:
    res = subprocess.run([BASH, "-n", "-c", cmd], capture_output=True, text=True)
    assert res.returncode == 0, (cmd, res.stderr)


@needs_bash
@pytest.mark.parametrize("calibrated", [False, True])
@pytest.mark.parametrize("group", [*GROUPS, ""])
def test_every_measurement_command_is_valid_shell(group, calibrated):
    cmd = command_for(group, "runs/my advise/dep (1)-k2-ctx1024.toml", calibrated)  # odd path
    _parses(cmd)
    assert all(line.startswith("mtpsim ") for line in cmd.splitlines())


DEP = deployment("k = [1, 2]\ndraws = 16\nmax_draws = 16")


def _known(dep_path):
    """Fresh k=2 beats fresh k=1; share at k=2 gains 8 (u - 0.45) % over it, u the draw's
    indexer_cost quantile: the gain spans 0 and the draft-step timing decides it."""
    return known_advice(dep_path, lambda u: 8 * (u - 0.45), param="indexer_cost")


@needs_bash
def test_the_printed_repeats_run_and_compare_every_one(monkeypatch, tmp_path):
    import mtpsim.uncertainty.advise as adv_mod

    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    known = _known(p)
    monkeypatch.setattr(adv_mod, "advise", lambda dep, jobs=1, progress=None: known)
    args = ["advise", str(p), "-j", "1", "--point-dir", str(tmp_path / "pts")]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    doubt = json.loads(res.stdout)["cannot_tell"]
    assert doubt["measurement"] == "draft-step phase timing"
    cmd = doubt["command"]
    _parses(cmd)
    for i in (1, 2, 3):
        assert f"--out runs/ab-{i} && mtpsim compare runs/ab-{i}" in cmd
    assert cmd.count(f"mtpsim run-real {doubt['point']} --engine vllm -p fresh -p share") == 3
    # printed as it is in the JSON, one command a line, each whole (never wrapped)
    text = CliRunner().invoke(app, args, env={"COLUMNS": "80"}).stdout
    printed = [ln.removeprefix("  ") for ln in text.splitlines() if ln.startswith(COMMAND)]
    assert "\n".join(printed) == cmd
