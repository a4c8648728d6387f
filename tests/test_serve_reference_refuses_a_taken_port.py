"""serve-reference on a port that is already taken: one line, exit 2, before any engine is built."""

import socket

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def test_a_taken_port_is_a_one_line_error_with_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = CliRunner().invoke(app, ["serve-reference", "--port", str(port), "--weights", "random-tiny"])
    assert res.exit_code == 2, res.output
    assert f"--port: expected a free port on 127.0.0.1, got {port}" in res.output
    assert "Traceback" not in res.output
