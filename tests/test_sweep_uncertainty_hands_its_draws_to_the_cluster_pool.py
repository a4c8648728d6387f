"""`mtpsim sweep --uncertainty N --cluster ADDR` runs every point's draws through the executor's
Ray backend with the cluster's nodes (checked first: a node holds a batch and simulates) and prints
what the local pool prints; `--uncertainty` with `--engine` stays one line, exit 2. Ray itself is
replaced here by an in-process stand-in that records what it was handed (the Ray backend's own
behaviour is tested on a real local cluster in
test_executor_runs_the_same_jobs_on_ray_as_on_local_workers)."""

from __future__ import annotations

import json

import pytest
from _sweep_experiment import write_small
from typer.testing import CliRunner

import mtpsim.cluster.connect as connect
import mtpsim.runs.executor_ray as executor_ray
from mtpsim.cli import app
from mtpsim.runs.jobs import attempt, settle

NODES = [connect.Node("a" * 32, "127.0.0.1", 2.0, 0.0), connect.Node("b" * 32, "127.0.0.1", 1.0, 0.0)]


@pytest.fixture
def fake_cluster(monkeypatch):
    handed: list = []
    checked: list = []

    def on_ray(fn, items, shared, pool, keep_going, placement):
        handed.append((pool, len(items)))
        for i, item in enumerate(items):
            yield i, settle(i, len(items), *attempt(fn, shared, item, pool.retries), keep_going)

    monkeypatch.setattr(connect, "connect", lambda address: list(NODES))
    monkeypatch.setattr(connect, "disconnect", lambda: None)
    monkeypatch.setattr(connect, "require_engine", lambda nodes, engine, **kw: checked.append(engine))
    monkeypatch.setattr(executor_ray, "on_ray", on_ray)
    return handed, checked


def test_the_draws_run_on_the_cluster_pool_and_print_what_the_local_pool_prints(fake_cluster, tmp_path):
    handed, checked = fake_cluster
    args = ["sweep", str(write_small(tmp_path)), "--set", "workload.max_concurrency=1,4",
            "--uncertainty", "3", "--json"]
    local = CliRunner().invoke(app, [*args, "-j", "1"])
    assert local.exit_code == 0, local.output
    assert not handed
    on_cluster = CliRunner().invoke(app, [*args, "--cluster", "127.0.0.1:6379", "--retries", "1"])
    assert on_cluster.exit_code == 0, on_cluster.output
    assert json.loads(on_cluster.stdout) == json.loads(local.stdout)
    assert checked == ["simulate"]
    assert len(handed) == 2  # one batch of draws per point
    for pool, n in handed:
        assert pool.nodes == tuple(NODES) and pool.retries == 1 and pool.size == 3 and n == 3


def test_uncertainty_with_a_real_engine_is_one_line(tmp_path):
    r = CliRunner().invoke(app, ["sweep", str(write_small(tmp_path)), "--uncertainty", "3",
                                 "--engine", "reference"])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == "error: --uncertainty: expected a simulation sweep (not with --engine)"
