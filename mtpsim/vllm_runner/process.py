"""A server in its own process group: started, waited for, and always stopped.

The group (a new session) keeps the terminal's Ctrl-C away from the server, so the runner
decides how it ends: SIGTERM to the whole group, SIGKILL after a grace period, and a check that
no member is left (vLLM starts engine-core and worker processes in the same group).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from mtpsim.blas_threads import user_environ
from mtpsim.errors import UserError
from mtpsim.serve_reference.server import HOST

LOG_TAIL_LINES = 30


class ServerError(UserError):
    """The server did not come up, or died; the message carries the tail of its log."""

    transient = True  # a taken port, a node short of memory: a sweep retries the point


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`, read from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_bytes()[-64_000:].decode("utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


# a server log's line -> what it means, where the line alone does not say it
KNOWN_CAUSES = (("Failed to infer device type", "no GPU visible to vLLM (\"Failed to infer device "
                 "type\"); `mtpsim doctor --smoke` checks a GPU node"),)


def log_cause(tail: str) -> str:
    """One line for an error message: what a known line means, else the log's last line that
    names an error (a traceback's last line), else its last line."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    for needle, meaning in KNOWN_CAUSES:
        if any(needle in ln for ln in lines):
            return meaning
    errors = [ln for ln in lines if "Error" in ln or "error:" in ln or "Exception" in ln]
    return (errors or lines or ["(empty log)"])[-1]


class ServerProcess:
    """`with ServerProcess(argv, env, log, port) as s: s.wait_healthy(timeout)` ... stopped on
    exit, whatever ended the block (return, exception, KeyboardInterrupt, SystemExit)."""

    def __init__(self, argv: list[str], env: Mapping[str, str], log_path: Path, port: int,
                 grace_s: float = 30.0) -> None:
        self.argv, self.env, self.log_path, self.port = list(argv), dict(env), log_path, port
        self.grace_s = grace_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pgid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            # the caller's environment, not the one-BLAS-thread default of this mtpsim process
            env = {**user_environ(), **self.env, "MTPSIM_PARENT_PID": str(os.getpid())}
            self.proc = subprocess.Popen(self.argv, env=env,
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def _fail(self, what: str) -> ServerError:
        return ServerError(self.log_path, None, f"{what}: {log_cause(log_tail(self.log_path))} "
                           "(the whole log is in the file named)")

    def wait_healthy(self, timeout_s: float, poll_s: float = 0.25) -> None:
        """Return once GET /health answers 200; raise ServerError if the server exits or
        `timeout_s` passes first."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if (code := self.proc.poll()) is not None:
                raise self._fail(f"the server exited with code {code} before /health answered")
            try:
                with urllib.request.urlopen(self.base_url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise self._fail(f"/health did not answer within {timeout_s:g} s")
            time.sleep(poll_s)

    def check_alive(self) -> None:
        if self.proc is not None and (code := self.proc.poll()) is not None:
            raise self._fail(f"the server exited with code {code} during the run")

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL to what is left after `grace_s`; reap the leader."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline:
            self.proc.poll()
            if not group_members(pgid):
                break
            time.sleep(0.1)
        else:
            _signal_group(pgid, signal.SIGKILL)
        self.proc.wait()
        end = time.monotonic() + 5.0
        while group_members(pgid) and time.monotonic() < end:
            _signal_group(pgid, signal.SIGKILL)
            time.sleep(0.1)

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, tp: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # A second Ctrl-C while stopping must not leave the group behind.
        if threading.current_thread() is not threading.main_thread():
            self.stop()
            return
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            self.stop()
        finally:
            signal.signal(signal.SIGINT, old)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
