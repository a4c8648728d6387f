"""A write that fails midway (disk full: ENOSPC, injected where the bytes reach the disk) is one
line naming the file, exit code 2, and leaves neither a partial file nor a temporary one; the
previous file, if any, is untouched."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim import fileio
from mtpsim.cli import app
from mtpsim.errors import UserError

EXPERIMENT = Path(__file__).parent.parent / "experiments" / "pr47352.toml"


@pytest.fixture
def disk_full(monkeypatch):
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", no_space)


def test_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, disk_full):
    target = tmp_path / "fresh.json"
    target.write_text("old")
    with pytest.raises(UserError) as e:
        fileio.atomic_write_json(target, {"new": 1})
    assert "No space left on device" in e.value.message() and str(target) in e.value.message()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json"]


def test_simulate_out_on_a_full_disk_is_one_line_exit_2(tmp_path, disk_full):
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["simulate", str(EXPERIMENT), "--set", "workload.num_prompts=4",
                                 "--set", "workload.output_len=32", "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert "No space left on device" in r.output and "Traceback" not in r.output
    assert list(out.iterdir()) == []  # no result, no temporary
