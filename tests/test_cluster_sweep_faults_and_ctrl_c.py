"""A real sweep on a local Ray cluster (127.0.0.1) survives a node dying mid-sweep: Ray reruns
the lost point elsewhere, every point ends up present once, and a rerun does nothing. Ctrl-C on
the driver cancels the tasks and leaves no mtpsim task or server process on any node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _ray_cluster import NODE, proc_cmdlines, write_tiny  # loopback switch first

pytest.importorskip("ray")

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

ROOT = Path(__file__).resolve().parents[1]


def _sweep(spec: Path, out: Path, address: str, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "mtpsim", "sweep", str(spec), "--engine", "reference",
           "--set", "speculative.index_topk=4,8,16", "--cluster", address, "--out", str(out),
           "--json", *extra]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _tasks_under(pid: int | None = None) -> list[int]:
    """Ray workers running a sweep point (their title is ray::<task name>), under a raylet or all."""
    out = []
    for p, cmd in proc_cmdlines().items():
        if cmd.startswith("ray::mtpsim-point-"):
            try:
                ppid = int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
            if pid is None or ppid == pid:
                out.append(p)
    return out


def _wait_for(cond, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"the sweep ended first: {proc.communicate()}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_ctrl_c_cancels_tasks_and_stops_every_server(ray_cluster, tmp_path):
    spec, out = write_tiny(tmp_path), tmp_path / "out"
    proc = _sweep(spec, out, ray_cluster.address, "--server")
    mine = str(tmp_path)  # every server names the weights in tmp_path; the driver its --out

    def servers() -> list[int]:
        return [p for p, cmd in proc_cmdlines().items() if "serve-reference" in cmd and mine in cmd]

    try:
        _wait_for(servers, 240, proc)
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    deadline = time.monotonic() + 30
    while (servers() or _tasks_under()) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {p: c for p, c in proc_cmdlines().items() if mine in c or c.startswith("ray::mtpsim-point-")}
    assert not left, left


def test_a_node_killed_mid_sweep_loses_no_point_and_a_rerun_does_nothing(ray_cluster, tmp_path):
    from ray._private import ray_constants

    spec, out = write_tiny(tmp_path), tmp_path / "out"
    ray_cluster.add_node(**NODE)
    ray_cluster.wait_for_nodes()
    raylets = {n.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid: n
               for n in ray_cluster.worker_nodes}
    proc = _sweep(spec, out, ray_cluster.address)
    busy: list = []

    def a_worker_node_runs_a_point() -> bool:
        busy[:] = [n for pid, n in raylets.items() if _tasks_under(pid)]
        return bool(busy)

    try:
        _wait_for(a_worker_node_runs_a_point, 240, proc)
        victim = busy[0]
        ray_cluster.remove_node(victim, allow_graceful=False)  # its raylet and workers die now
        stdout, stderr = proc.communicate(timeout=420)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    rows = json.loads(stdout)["rows"]
    keys = [(r["speculative.index_topk"], r["policy"]) for r in rows]
    assert sorted(keys) == sorted({(k, p) for k in (4, 8, 16) for p in ("fresh", "share")})
    assert all(r["repeats"] == 1 for r in rows)
    points = sorted((out / "points").iterdir())
    assert len(points) == 3 and not list(out.glob("points/*/failed.json"))
    for d in points:
        assert sorted(f.name for f in (d / "r0").glob("*.json")) == ["fresh.json", "share.json"]
        nodes = {json.loads(f.read_text())["extra"]["node"]["ray_node_id"] for f in d.glob("r0/*.json")}
        assert len(nodes) == 1 and victim.node_id not in nodes  # redone whole, off the dead node
    stamps = {f: f.stat().st_mtime_ns for f in out.rglob("*") if f.is_file() and f.name != "sweep.json"}
    again = _sweep(spec, out, ray_cluster.address)
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr
    assert stdout.strip(), stderr  # the rows as JSON; what went wrong is on stderr
    assert json.loads(stdout)["resumed"] == 3
    assert stamps == {f: f.stat().st_mtime_ns for f in out.rglob("*")
                      if f.is_file() and f.name != "sweep.json"}
