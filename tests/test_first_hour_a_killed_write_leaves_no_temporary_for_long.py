"""A process killed during a write (SIGKILL, a power cut) leaves its temporary file,
`.NAME.XXXXXXXX.tmp`, beside the result it was writing: the atomic writer removes it only when
the write itself fails. Such files piled up in `--out` folders (a trace's can be hundreds of MiB).
Now the next successful write into that folder removes them: our own naming only, older than a
few seconds, and only when no live writer holds the lock every write takes on its temporary."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mtpsim import fileio

ROOT = Path(__file__).resolve().parents[1]
HANG_IN_WRITE = """
import sys, time
from mtpsim import fileio
fileio.os.fsync = lambda fd: (print("writing", flush=True), time.sleep(600))
fileio.atomic_write_text(sys.argv[1], "half")
"""


def _writer_stuck_in(target: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HANG_IN_WRITE, str(target)], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "writing\n"
    return p


def _temporaries(folder: Path, name: str) -> list[Path]:
    return sorted(folder.glob(f".{name}.*.tmp"))


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_the_next_write_removes_a_killed_writers_temporary_and_keeps_a_live_ones(tmp_path):
    dead = _writer_stuck_in(tmp_path / "fresh.json")
    live = _writer_stuck_in(tmp_path / "share.json")
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(30)
        [left] = _temporaries(tmp_path, "fresh.json")
        [held] = _temporaries(tmp_path, "share.json")
        foreign = tmp_path / ".notes.txt.tmp"  # not our naming: not ours to remove
        foreign.write_text("x")
        for p in (left, held, foreign):
            _age(p, 60)
        fileio.atomic_write_text(tmp_path / "fresh.json", "whole")
        assert (tmp_path / "fresh.json").read_text() == "whole"
        assert not left.exists()  # the killed write's temporary is gone
        assert held.exists() and foreign.exists()  # a live write's, and a foreign file, stay
    finally:
        live.kill()
        live.wait(30)


def test_a_fresh_temporary_is_left_for_a_writer_between_creating_and_locking_it(tmp_path):
    young = tmp_path / ".fresh.json.abcd1234.tmp"
    young.write_text("")
    fileio.atomic_write_text(tmp_path / "fresh.json", "whole")
    assert young.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".fresh.json.abcd1234.tmp", "fresh.json"]
