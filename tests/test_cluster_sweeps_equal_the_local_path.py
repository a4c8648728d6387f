"""On a local two-node Ray cluster (127.0.0.1), `mtpsim sweep --cluster` gives what the local
path gives: a simulation sweep identical records, a real sweep on the reference engine the same
tokens and acceptance for the same seeds; each point's runs come from one node, and the bad
inputs (too few GPUs, an engine missing on a node, an unreachable address) are one-line errors
before any work. Node-kill and Ctrl-C behaviour are in test_cluster_sweep_faults_and_ctrl_c."""

from __future__ import annotations

import json
import os

import pytest
from _ray_cluster import NODE, write_tiny  # sets Ray's loopback switch first

pytest.importorskip("ray")

from _sweep_experiment import write_small  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from mtpsim.cli import app  # noqa: E402
from mtpsim.sweep import build_points, run_points  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def _invoke(args):
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def test_simulation_sweep_on_the_cluster_is_identical_to_local(ray_cluster, tmp_path):
    exp = write_small(tmp_path)
    sets = ["speculative.num_speculative_tokens=2,3,4", "workload.max_concurrency=1,4"]
    out = tmp_path / "ray"
    r = _invoke(["sweep", str(exp), *sum((["--set", s] for s in sets), []), "--cluster",
                 ray_cluster.address, "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    _, points = build_points(exp, sets)
    here = tmp_path / "local"  # the local path writes its point files as the cluster's driver does
    local = {rec["point_id"]: rec for rec in run_points(str(exp), points, here, jobs=1)}
    assert len(local) == 6
    for p in points:
        on_ray = json.loads((out / "points" / f"{p.point_id}.json").read_text())
        assert on_ray == json.loads((here / "points" / f"{p.point_id}.json").read_text()), p.values
        assert on_ray["mtpsim"]["code"] and on_ray["results"] == json.loads(json.dumps(
            local[p.point_id]["results"])), p.values
    rerun = _invoke(["sweep", str(exp), *sum((["--set", s] for s in sets), []), "--cluster",
                     ray_cluster.address, "--out", str(out), "--json"])
    assert json.loads(rerun.stdout)["resumed"] == 6


def _runs(out):
    runs = {}
    for f in sorted(out.glob("points/*/r*/*.json")):
        res = json.loads(f.read_text())
        runs[(f.parent.parent.name, f.parent.name, res["policy"])] = res
    return runs


def test_real_sweep_on_the_cluster_matches_the_local_run(ray_cluster, tmp_path):
    spec = write_tiny(tmp_path)
    common = ["sweep", str(spec), "--engine", "reference", "--repeats", "2",
              "--set", "speculative.index_topk=4,8", "--json"]
    r = _invoke([*common, "--out", str(tmp_path / "local")])
    assert r.exit_code == 0, r.output
    r = _invoke([*common, "--out", str(tmp_path / "ray"), "--cluster", ray_cluster.address])
    assert r.exit_code == 0, r.output
    local, on_ray = _runs(tmp_path / "local"), _runs(tmp_path / "ray")
    assert len(local) == 8 and local.keys() == on_ray.keys()  # 2 points x 2 repeats x 2 policies
    for key, a in local.items():
        b = on_ray[key]
        assert b["seed"] == a["seed"] == 3 + int(key[1][1:])  # repeat R runs seed + R
        assert b["extra"]["output_tokens_sha256"] == a["extra"]["output_tokens_sha256"], key
        for k in ("spec_decode_num_drafts", "spec_decode_accepted_tokens",
                  "spec_decode_acceptance_length", "total_output_tokens"):
            assert b[k] == a[k], (key, k)
        assert [q["accepted_per_pos"] for q in b["requests"]] == [
            q["accepted_per_pos"] for q in a["requests"]]
    by_point: dict[str, set] = {}
    for (pid, _, _), res in on_ray.items():
        by_point.setdefault(pid, set()).add(res["extra"]["node"]["ray_node_id"])
    assert all(len(nodes) == 1 for nodes in by_point.values()), by_point  # A/B on one node
    rows = json.loads(r.stdout)["rows"]
    assert sorted((row["speculative.index_topk"], row["policy"], row["repeats"]) for row in rows) == [
        (4, "fresh", 2), (4, "share", 2), (8, "fresh", 2), (8, "share", 2)]


def test_a_point_needing_more_gpus_than_any_node_is_refused_before_work(ray_cluster, tmp_path):
    spec = write_tiny(tmp_path)
    r = _invoke(["sweep", str(spec), "--engine", "vllm", "--set", "engine.tp=1,2",
                 "--set", "model.name=x/y", "--cluster", ray_cluster.address,
                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert "\n" not in line and "engine.tp" in line and "GPUs" in line, line
    assert not list((tmp_path / "o").glob("points/*"))


def test_an_engine_missing_on_a_node_is_refused_before_work(ray_cluster, tmp_path):
    spec = write_tiny(tmp_path)
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named torch')\n")
    path = os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])
    node = ray_cluster.add_node(**NODE, env_vars={"PYTHONPATH": path})
    ray_cluster.wait_for_nodes()
    try:
        r = _invoke(["sweep", str(spec), "--engine", "reference", "--set",
                     "speculative.index_topk=4,8", "--cluster", ray_cluster.address,
                     "--out", str(tmp_path / "o")])
    finally:
        ray_cluster.remove_node(node)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert "\n" not in line and "--engine reference" in line and "torch" in line, line
    assert not list((tmp_path / "o").glob("points/*"))


def test_an_unreachable_address_is_one_line(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _invoke(["sweep", str(write_small(tmp_path)), "--set", "workload.max_concurrency=1,4",
                 "--cluster", f"127.0.0.1:{port}"])
    assert r.exit_code == 2 and "--cluster" in r.output and "reachable" in r.output, r.output
    r = _invoke(["sweep", str(write_small(tmp_path)), "--cluster", "nohost"])
    assert r.exit_code == 2 and "ray://HOST:PORT" in r.output, r.output
