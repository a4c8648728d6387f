"""Whole-process time of `mtpsim simulate experiments/pr47352.toml` (both policies), next to the
interpreter's own start-up and `mtpsim --help`, and how the simulation's cost grows with the
request count (256 -> 10,240 requests: 40x the work, so linear means <= 40x the time).

Each command runs `--repeat` times in turn (interleaved, so load drifts hit all alike); the
table gives the median wall and the median and lowest CPU (user + sys) seconds. On a shared
machine wall time is noisy: compare the ratios within one run, and read CPU time as the cost on
an idle machine.

    python benchmarks/bench_simulate_process.py [--repeat 12] [--skip-scaling] [--baseline DIR]
                                                [--instructions] [--installed PYTHON ...]
                                                [--no-terminal] [--bin DIR]

`--baseline DIR` also times `mtpsim simulate` from another checkout (e.g. an older commit,
`git archive COMMIT | tar -x -C DIR`), interleaved with this one, for a side-by-side ratio.

Bytecode: where PYTHONDONTWRITEBYTECODE is set (this project's shared machine sets it) an
editable checkout's modules are compiled from source on every run. The rows marked "bytecode
cached" run with Python's default instead (bytecode written once, here to a temporary
PYTHONPYCACHEPREFIX, as a pip-installed mtpsim has it from its install), after one warm-up run.
The other rows write to /dev/null; "to a terminal" writes stdout to a pseudo-terminal (80
columns, TERM=xterm-256color), where the tables are in rich's styles, and "to a terminal, as a
shell runs it" stderr too (where `simulate` may also show progress bars), as when a user runs it.

`--instructions` also counts the instructions of one `mtpsim simulate` (valgrind's callgrind),
as this machine runs it and with bytecode cached, here and in DIR: a figure the machine's load
does not move (CPU seconds on a loaded 2-core VM grow with the load), deterministic but for
small differences between runs (the hash seed is fixed).

`--installed PYTHON` also times `PYTHON -m mtpsim simulate` (and the `mtpsim` console script
beside PYTHON, as a user runs it, where there is one) where PYTHON's environment has
mtpsim installed without -e (`pip install .` compiles the bytecode as it installs, whether
PYTHONDONTWRITEBYTECODE is set or not), from a folder that holds only the experiment files,
beside that environment's own floor: `PYTHON -c pass` and `PYTHON -c 'import numpy'` with one
OpenBLAS thread (as an mtpsim process runs numpy). Give it more than once (e.g. a fresh venv with
`pip install .` of this checkout and one of the code before) to time them side by side; a venv
made without --system-site-packages starts without this machine's own .pth hooks (an editable
install's finder, a sandbox's certifi hook), as a user's does.

The floor rows: `python -S -c pass` (no site hooks), `python -c pass`, `python -c 'import
numpy'`, the same with OPENBLAS_NUM_THREADS=1 (what an mtpsim process pays for numpy: its
entry point sets that). `--no-terminal` leaves out the pseudo-terminal rows (for more rounds).

`--bin DIR` also times `DIR/python -c pass` and `DIR/mtpsim simulate` (this checkout still first
on PYTHONPATH), e.g. DIR = ~/.pyenv/shims, where a shell on this project's machine finds both:
pyenv's shims are bash scripts that find the interpreter before starting it. (Run under a shim,
this script's own PATH starts with the interpreter's folder, so PATH cannot tell it.)
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXP = "experiments/pr47352.toml"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -S -c pass (no site hooks)": [sys.executable, "-S", "-c", "pass"],
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "mtpsim --help": [sys.executable, "-m", "mtpsim", "--help"],
    f"mtpsim simulate {EXP}": [sys.executable, "-m", "mtpsim", "simulate", EXP],
    f"mtpsim simulate {EXP} --json": [sys.executable, "-m", "mtpsim", "simulate", EXP, "--json"],
}


def timed(cmd: list[str], env: dict[str, str], cwd: Path, tty: str = "") -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run; `tty` "stdout": its stdout a terminal (a
    pseudo-terminal drained by a thread) instead of /dev/null; "both": stderr too, as when a
    user runs it in a shell; "": neither (stderr is this script's)."""
    master, out = pty.openpty() if tty else (-1, subprocess.DEVNULL)
    drain = threading.Thread(target=_drain, args=(master,)) if tty else None
    if drain is not None:
        drain.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=out if tty == "both" else None,
                   check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if drain is not None:
        os.close(out)
        drain.join()
        os.close(master)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except OSError:  # the terminal's other end closed
        pass


def _env(root: Path, pycache: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _terminal(env: dict[str, str]) -> dict[str, str]:
    """A colour terminal of 80 columns, whatever this script's environment says."""
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    return {**env, "TERM": "xterm-256color"}


def installed_case(python: str, tmp: Path) -> tuple[list[str], Path, dict[str, str]]:
    """`python -m mtpsim simulate` of an installed mtpsim: run where no mtpsim/ folder is on the
    path (only the experiment files and the uncertainty summary its headline quotes)."""
    run = tmp / "installed"
    if not run.exists():
        shutil.copytree(ROOT / "experiments", run / "experiments")
        shutil.copytree(ROOT / "docs/data/pr47352-uncertainty", run / "docs/data/pr47352-uncertainty")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([python, "-c", "import mtpsim, numpy; print(mtpsim.__file__, numpy.__version__)"],
                           cwd=run, env=env, capture_output=True, text=True, check=True).stdout.strip()
    print(f"installed mtpsim ({python}): {where}")
    return [python, "-m", "mtpsim", "simulate", EXP], run, env


def installed_cases(pythons: list[str], tmp: Path) -> dict[str, tuple[list[str], Path, dict[str, str], str]]:
    """Each installed environment's floor and its `simulate`, labelled by the environment's
    folder (PYTHON's grandparent, a venv's name)."""
    cases = {}
    for python in pythons:
        cmd, run, env = installed_case(python, tmp)
        name = Path(python).absolute().parents[1].name if Path(python).parent.name == "bin" else python
        one_blas = {**env, "OPENBLAS_NUM_THREADS": "1"}
        cases[f"[{name}] python -c pass"] = ([python, "-c", "pass"], run, env, "")
        cases[f"[{name}] python -c 'import numpy', one BLAS thread"] = (
            [python, "-c", "import numpy"], run, one_blas, "")
        cases[f"[{name}] mtpsim simulate {EXP}"] = (cmd, run, env, "")
        script = Path(python).parent / "mtpsim"  # the console script pip wrote beside PYTHON
        if script.exists():
            cases[f"[{name}] the same, as its console script"] = (
                [str(script), *cmd[3:]], run, env, "")
    return cases


def bin_cases(bin_dir: Path) -> dict[str, list[str]]:
    """`python -c pass` and `mtpsim simulate` of another folder's `python` and `mtpsim` (pyenv's
    shims, say)."""
    python, mtpsim = bin_dir / "python", bin_dir / "mtpsim"
    if not (python.exists() and mtpsim.exists()):
        raise SystemExit(f"--bin: expected python and mtpsim in {bin_dir}")
    return {f"{python} -c pass": [str(python), "-c", "pass"],
            f"{mtpsim} simulate {EXP}": [str(mtpsim), "simulate", EXP]}


def process_table(repeat: int, baseline: Path | None, tmp: Path, installed: list[str] | None = None,
                  terminal: bool = True, bin_dir: Path | None = None) -> None:
    sim = COMMANDS[f"mtpsim simulate {EXP}"]
    cases = {name: (cmd, ROOT, _env(ROOT), "") for name, cmd in COMMANDS.items()}
    cases["python -c 'import numpy', one BLAS thread"] = (
        COMMANDS["python -c 'import numpy'"], ROOT, {**_env(ROOT), "OPENBLAS_NUM_THREADS": "1"}, "")
    cases.update(installed_cases(installed or [], tmp))
    for name, cmd in (bin_cases(bin_dir) if bin_dir is not None else {}).items():
        cases[name] = (cmd, ROOT, _env(ROOT), "")
    for label, root in (("", ROOT), *([] if baseline is None else [("baseline: ", baseline.resolve())])):
        cache = tmp / ("base" if label else "this")
        if label:
            cases[f"{label}mtpsim simulate {EXP}"] = (sim, root, _env(root), "")
        cases[f"{label}mtpsim simulate {EXP}, bytecode cached"] = (sim, root, _env(root, cache), "")
        if not terminal:
            continue
        cases[f"{label}mtpsim simulate {EXP}, to a terminal"] = (sim, root, _terminal(_env(root)),
                                                                "stdout")
        cases[f"{label}the same, to a terminal, as a shell runs it"] = (sim, root, _terminal(_env(root)),
                                                                       "both")
        cases[f"{label}the same, as a shell runs it, bytecode cached"] = (
            sim, root, _terminal(_env(root, cache)), "both")
    for cmd, root, env, tty in cases.values():  # warm-up: writes the cached bytecode
        timed(cmd, env, root, tty)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    load = [os.getloadavg()[0]]
    for _ in range(repeat):
        for name, (cmd, root, env, tty) in cases.items():
            runs[name].append(timed(cmd, env, root, tty))
        load.append(os.getloadavg()[0])
    base_wall = statistics.median(w for w, _ in runs["python -c pass"])
    print(f"whole process, median of {repeat} runs each (interleaved); load average (1 min) "
          f"{min(load):.1f}-{max(load):.1f} during the runs; {os.cpu_count()} CPUs")
    print(f"{'command':<76} {'wall s':>7} {'CPU s':>7} {'CPU min':>8} {'CPU max':>8} {'wall / python':>14}")
    for name, r in runs.items():
        wall, cpu = statistics.median(w for w, _ in r), statistics.median(c for _, c in r)
        print(f"{name:<76} {wall:>7.3f} {cpu:>7.3f} {min(c for _, c in r):>8.3f} "
              f"{max(c for _, c in r):>8.3f} {wall / base_wall:>14.1f}", flush=True)


def instruction_table(baseline: Path | None, tmp: Path, installed: list[str] | None = None) -> None:
    """Instructions of one `mtpsim simulate` per checkout, bytecode compiled on the run (as this
    machine runs it) and cached (after a warm-up run that writes it), and cached with stdout a
    terminal (stderr not: under valgrind the run lasts long enough for the progress bars, which a
    plain run is too short to show); and of the installed one."""
    if shutil.which("valgrind") is None:
        print("\nvalgrind not found: no instruction counts")
        return
    sim = COMMANDS[f"mtpsim simulate {EXP}"]
    roots = {"this": ROOT, **({} if baseline is None else {"baseline": baseline.resolve()})}
    counts: dict[tuple[str, str], int] = {}
    for label, root in roots.items():
        for kind in ("compiled each run", "cached", "cached, to a terminal"):
            cached = kind != "compiled each run"
            env = {**_env(root, tmp / f"ir-{label}" if cached else None), "PYTHONHASHSEED": "0"}
            if kind == "cached":
                timed(sim, env, root)  # writes the bytecode
            tty = kind.endswith("terminal")
            counts[label, kind] = _instructions(sim, root, _terminal(env) if tty else env, tty, tmp)
    for python in installed or []:
        cmd, run, env = installed_case(python, tmp)
        name = Path(python).absolute().parents[1].name if Path(python).parent.name == "bin" else python
        counts[name, "from pip install"] = _instructions(cmd, run, {**env, "PYTHONHASHSEED": "0"},
                                                         False, tmp)
        script = Path(python).parent / "mtpsim"
        if script.exists():
            counts[name, "console script"] = _instructions([str(script), *cmd[3:]], run,
                                                           {**env, "PYTHONHASHSEED": "0"}, False, tmp)
    print(f"\ninstructions of one `mtpsim simulate {EXP}` (valgrind --tool=callgrind, PYTHONHASHSEED=0)")
    print(f"{'checkout':<16} {'bytecode':<22} {'instructions':>14} {'/ baseline':>11}")
    for (label, kind), n in counts.items():
        base = counts.get(("baseline", "cached" if kind in ("from pip install", "console script") else kind))
        ratio = f"{n / base:>11.3f}" if base else f"{'':>11}"
        print(f"{label:<16} {kind:<22} {n:>14,} {ratio}")


def _instructions(cmd: list[str], cwd: Path, env: dict[str, str], tty: bool, tmp: Path) -> int:
    """callgrind's instruction count of one run (`tty`: stdout a pseudo-terminal)."""
    log = tmp / "callgrind.log"
    master, out = pty.openpty() if tty else (-1, subprocess.DEVNULL)
    drain = threading.Thread(target=_drain, args=(master,)) if tty else None
    if drain is not None:
        drain.start()
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                    f"--log-file={log}", *cmd], cwd=cwd, env=env, stdout=out,
                   stderr=subprocess.DEVNULL, check=True)
    if drain is not None:
        os.close(out)
        drain.join()
        os.close(master)
    return int(re.findall(r"Collected : (\d+)", log.read_text())[-1])


def scaling_table(repeat: int) -> None:
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    sizes = (256, 2_560, 10_240)
    print(f"\nsimulation only (in process, both policies), best of {repeat}, sizes interleaved; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'requests':>9} {'wall s':>8} {'CPU s':>8} {'CPU us / request':>17} "
          f"{'py iters / request':>19} {'CPU x':>6}")
    exps = {n: load_experiment(ROOT / EXP, [f"workload.num_prompts={n}"]) for n in sizes}
    wall = dict.fromkeys(sizes, float("inf"))
    cpu = dict.fromkeys(sizes, float("inf"))
    iters = dict.fromkeys(sizes, 0.0)
    for _ in range(repeat):
        for n in sizes:  # interleaved, so load drifts hit every size alike
            t0, c0 = time.perf_counter(), time.process_time()
            results = [simulate(exps[n], p) for p in exps[n].policies]
            wall[n] = min(wall[n], time.perf_counter() - t0)
            cpu[n] = min(cpu[n], time.process_time() - c0)
            iters[n] = sum(r.extra.python_iterations for r in results) / (n * len(results))
    for n in sizes:
        print(f"{n:>9} {wall[n]:>8.3f} {cpu[n]:>8.3f} {1e6 * cpu[n] / n:>17.1f} "
              f"{iters[n]:>19.2f} {cpu[n] / cpu[sizes[0]]:>6.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=12)
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--baseline", type=Path, help="another checkout to time side by side")
    ap.add_argument("--instructions", action="store_true",
                    help="also count one simulate's instructions under valgrind (load-independent)")
    ap.add_argument("--installed", metavar="PYTHON", action="append",
                    help="also time PYTHON -m mtpsim simulate, mtpsim installed there without -e, "
                         "and PYTHON's floor (repeatable)")
    ap.add_argument("--no-terminal", action="store_true", help="leave out the pseudo-terminal rows")
    ap.add_argument("--bin", type=Path, metavar="DIR",
                    help="also time DIR/python -c pass and DIR/mtpsim simulate (e.g. pyenv's shims)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as tmp:
        process_table(args.repeat, args.baseline, Path(tmp), args.installed, not args.no_terminal,
                      args.bin)
        if args.instructions:
            instruction_table(args.baseline, Path(tmp), args.installed)
    if not args.skip_scaling:
        scaling_table(max(1, args.repeat // 2))


if __name__ == "__main__":
    main()
