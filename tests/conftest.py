"""Suite-wide rules and shared fixtures.

Under CI (CI=true) no test may be skipped: tests that need vLLM, fastapi or aiohttp use
`pytest.importorskip` so that a partial local install still runs the rest; in CI those packages
are installed by scripts/install-test-deps.sh and the vLLM contract tests must run, so a skip
there means a broken install and fails the run.

`slow` marks tests that start clusters, servers or whole processes, and the data sweeps and
large-sample recoveries (every shipped file; fits of hundreds of synthetic requests);
`pytest -m "not slow" -n 2` (pytest-xdist, one worker per core) is the quick loop while editing,
and CI runs everything in one process (README's test command). Tests must stay safe to run in
parallel: temporary folders from tmp_path, port 0, no shared files written.
"""

from __future__ import annotations

import os
import signal

import pytest

# A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored in every
# child across exec: the Ctrl-C tests' children would then never see KeyboardInterrupt. A handled
# signal resets to the default in a child, so handle it here whatever started the suite.
signal.signal(signal.SIGINT, signal.default_int_handler)

# Ray reads this once, when it is first imported, and some test modules import ray while they are
# collected: set here, before any of them, it keeps every Ray address of the suite on loopback
# (otherwise a driver joins a 127.0.0.1 cluster as the machine's interface address and never
# connects).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

_skipped: list[str] = []


@pytest.fixture
def cpu_platform(monkeypatch):
    """vLLM computes argument defaults and model choices from the current platform, and these
    machines have no GPU (vLLM finds no platform): act as on vLLM's CPU platform."""
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    monkeypatch.setattr(vllm.platforms, "_current_platform", CpuPlatform())


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster (head + one worker node, one CPU each, on 127.0.0.1) for the whole
    session: starting one takes tens of seconds. Tests that add nodes remove them again."""
    pytest.importorskip("ray")
    from _ray_cluster import start_cluster

    cluster = start_cluster(workers=1)
    yield cluster
    import ray

    ray.shutdown()
    cluster.shutdown()


def _record(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append(f"{report.nodeid}: {reason}")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _record(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") and _skipped:
        print("\nCI runs every test; these were skipped (an install step is missing?):")
        for line in _skipped:
            print(f"  {line}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The bad-input fuzzer's totals (tests/_fuzz.py), last in the log: cases, broken, seed."""
    import sys

    fuzz = sys.modules.get("_fuzz")
    if fuzz is None or not fuzz.RUNS:
        return
    cases = sum(n for _, n, _ in fuzz.RUNS)
    broken = sum(b for _, _, b in fuzz.RUNS)
    terminalreporter.write_sep("=", "bad-input fuzzing")
    by_name: dict[str, list[int]] = {}
    for name, n, b in fuzz.RUNS:
        totals = by_name.setdefault(name, [0, 0])
        totals[0] += n
        totals[1] += b
    for name, (n, b) in by_name.items():
        terminalreporter.write_line(f"  {name}: {n} cases, {b} broken")
    terminalreporter.write_line(f"fuzz: {cases} cases, {broken} broken, seed {fuzz.SEED} "
                                f"(replay: MTPSIM_FUZZ_SEED={fuzz.SEED})")
