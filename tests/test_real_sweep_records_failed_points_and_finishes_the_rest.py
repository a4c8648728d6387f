"""A real sweep whose run fails (here: its server cannot bind a taken port) retries the point a
bounded number of times, then records it as failed with the reason and finishes the others;
the command lists the failure and exits 1, and a rerun retries only what is not complete."""

from __future__ import annotations

import json
import socket

import pytest
from _ray_cluster import write_tiny
from typer.testing import CliRunner

from mtpsim.cli import app

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def test_a_failing_point_is_recorded_and_the_rest_finish(tmp_path):
    spec, out = write_tiny(tmp_path), tmp_path / "out"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # Two points: one serves on the taken port and fails, the other on a free one.
        args = ["sweep", str(spec), "--engine", "reference", "--server", "--set",
                "policies=[\"fresh\"]", "--set", f"vllm.port={port},0", "--out", str(out), "--json"]
        r = CliRunner().invoke(app, [*args, "--retries", "1"])
    assert r.exit_code == 1, r.output
    failed = list(out.glob("points/*/failed.json"))
    assert len(failed) == 1
    rec = json.loads(failed[0].read_text())
    assert rec["values"] == {"vllm.port": port} and "ServerError" in rec["reason"], rec
    assert not list(failed[0].parent.glob("r0/*.json"))
    assert len(list(out.glob("points/*/r0/fresh.json"))) == 1  # the other point finished
    assert f"vllm.port={port}" in r.output and "Traceback" not in r.output
    ok = CliRunner().invoke(app, args)  # the port is free now
    assert ok.exit_code == 0, ok.output
    summary = json.loads(ok.stdout)
    assert summary["failed"] == [] and summary["resumed"] == 1
    assert not list(out.glob("points/*/failed.json"))  # cleared once the point succeeded
    assert len(list(out.glob("points/*/r0/fresh.json"))) == 2
