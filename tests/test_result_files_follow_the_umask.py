"""Results, traces and plots are written atomically with the mode the umask allows, like any tool
(mkstemp alone would leave them 0600, unreadable to others on a shared cluster)."""

import os
import stat

import pytest

from mtpsim.fileio import atomic_write_json, atomic_write_text


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomic_writes_get_0666_less_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        atomic_write_json(tmp_path / "fresh.json", {"a": 1})
        atomic_write_text(tmp_path / "fresh.trace.jsonl", "{}\n")
    finally:
        os.umask(old)
    for name in ("fresh.json", "fresh.trace.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "fresh.trace.jsonl"]


def test_a_rewrite_keeps_following_the_umask(tmp_path):
    path = tmp_path / "r.json"
    old = os.umask(0o077)
    try:
        atomic_write_json(path, {"a": 1})
        os.umask(0o022)
        atomic_write_json(path, {"a": 2})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_text() == '{\n  "a": 2\n}\n'
