"""`mtpsim simulate` with plainly valid flags is read from its declared parameters without
importing Typer; every such command line gives the function the same values Typer gives it, and
anything else (help, an unknown flag, a bad value) is left to Typer, whose one-line errors and
exit code 2 stay what they were."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mtpsim.commands.simulate as simulate_module
from mtpsim.cli import build_app
from mtpsim.cliopts import Param, declared, parse
from mtpsim.commands.simulate import PARAMS

ROOT = Path(__file__).resolve().parents[1]
EXP = "experiments/pr47352.toml"

EVERYDAY = [
    [EXP],
    [EXP, "--json"],
    ["--json", EXP],
    [EXP, "--set", "workload.num_prompts=64", "--set=engine.max_num_seqs=8", "-p", "fresh",
     "--policy", "share", "--seed", "3", "--expected", "--out", "runs/sim", "--force"],
    [EXP, "--uncertainty", "64", "-j", "1", "--metrics", "all", "--json"],
    [EXP, "--trace", "a.trace.jsonl", "--trace=b.trace.jsonl", "--bootstrap", "0",
     "--save-calibration", "cal.json", "--plot", "plots"],
    [EXP, "--trace", "a.trace.jsonl", "--indexer-keys", "padded", "--save-calibration", "cal.json"],
    [EXP, "--seed", "0", "--jobs=12", "--bootstrap=32"],
]
LEFT_TO_TYPER = [
    [], [EXP, "--help"], ["--help"], [EXP, "-h"], [EXP, "--bogus"], [EXP, "--seed"],
    [EXP, "--seed", "x"], [EXP, "--seed", "-1"], [EXP, "--seed", "+3"], [EXP, "--seed", " 3"],
    [EXP, "--seed", "3.0"], [EXP, "--seed=", EXP], [EXP, "--jobs", "0"], [EXP, "--bootstrap=-1"],
    [EXP, "--expected=1"], [EXP, "--json", "--json"], [EXP, "--seed", "1", "--seed", "2"],
    [EXP, EXP], [EXP, "--", "--json"], [EXP, "-pfresh"], [EXP, "--out", "-"], ["-", "--json"],
    [EXP, "--no-expected"], [EXP, "--se", "3"],
]


def typer_values(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[int, dict | None]:
    """Exit code and the keyword arguments Typer passes to simulate for `argv`."""
    seen: list[dict] = []

    @declared(*PARAMS)
    def record(experiment, set_=None, policy=None, seed=None, expected=False, as_json=False,
               out=None, force=False, trace=None, save_calibration=None, indexer_keys="own", plot=None,
               bootstrap=0, uncertainty=None, jobs=None, metrics=None):
        seen.append({k: v for k, v in locals().items() if k != "seen"})

    monkeypatch.setattr(simulate_module, "simulate", record)
    r = CliRunner().invoke(build_app(["simulate"]), ["simulate", *argv])
    return r.exit_code, (seen[0] if seen else None)


@pytest.mark.parametrize("argv", EVERYDAY, ids=" ".join)
def test_everyday_command_lines_are_read_as_typer_reads_them(monkeypatch, argv):
    values = parse(PARAMS, argv)
    assert values is not None, "an everyday command line should not need Typer"
    assert typer_values(monkeypatch, argv) == (0, values)


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=" ".join)
def test_anything_not_plainly_valid_is_left_to_typer(monkeypatch, argv):
    assert parse(PARAMS, argv) is None
    code, _ = typer_values(monkeypatch, argv)
    assert code in (0, 2)  # Typer's help or its one-line error


def test_random_command_lines_are_read_alike_or_left_to_typer(monkeypatch):
    """Flags in random order and forms, with values good and bad: whatever the fast reader
    accepts, Typer accepts with the same values."""
    rng = random.Random(7)
    pool = ["3", "0", "07", "-1", "", "x", "1e3", "+3", "3_0", "٣", "12", "99999999999999999999",
            "runs/a", "a b", "k=v", "--json"]
    flags = [f for p in PARAMS for f in p.flags]
    accepted = 0
    for _ in range(60):
        argv: list[str] = [EXP] if rng.random() < 0.9 else []
        for _ in range(rng.randint(0, 4)):
            flag = rng.choice(flags)
            p = next(p for p in PARAMS if flag in p.flags)
            if p.kind is bool:
                argv.insert(rng.randint(0, len(argv)), flag)
            elif rng.random() < 0.3 and flag.startswith("--"):
                argv.append(f"{flag}={rng.choice(pool)}")
            else:
                argv += [flag, rng.choice(pool)]
        values = parse(PARAMS, argv)
        if values is None:
            continue
        accepted += 1
        assert typer_values(monkeypatch, argv) == (0, values), argv
    assert accepted >= 10, accepted


def test_a_declaration_that_differs_from_the_function_is_refused_at_import():
    with pytest.raises(TypeError, match="differ from the declaration"):
        @declared(Param("x", int, "x", ("--x",), 1))
        def command(x: int = 2) -> None: ...


def _main(*args: str) -> subprocess.CompletedProcess:
    probe = ("import sys\nfrom mtpsim.cli import main\nsys.argv = ['mtpsim', *sys.argv[1:]]\n"
             "try:\n    main()\nfinally:\n"
             "    print('HEAVY', *sorted(m for m in ('typer', 'click', 'pydantic') if m in sys.modules))")
    return subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_a_plain_simulate_process_imports_no_typer_click_or_pydantic():
    r = _main("simulate", EXP, "--set", "workload.num_prompts=8", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rsplit("HEAVY", 1)[1].split() == []


def test_help_and_bad_flags_still_come_from_typer_as_one_line_with_exit_2():
    r = _main("simulate", "--help")
    assert r.returncode == 0 and "Usage:" in r.stdout and "--save-calibration" in r.stdout
    for args, says in ((["--bogus"], "No such option: --bogus"),
                       (["--seed", "x"], "Invalid value for '--seed'"),
                       (["--jobs", "0"], "Invalid value for '--jobs' / '-j'")):
        r = _main("simulate", EXP, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and says in r.stderr and "Traceback" not in r.stderr


def test_a_user_error_on_the_fast_path_is_one_line_and_exit_2():
    r = _main("simulate", "experiments/nope.toml")
    assert r.returncode == 2
    assert r.stderr == "error: experiments/nope.toml: experiment file not found\n"
