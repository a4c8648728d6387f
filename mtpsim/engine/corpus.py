"""The offline corpus: the running Python's standard-library `.py` files as bytes.

Deterministic on a given Python: files sorted by path relative to the stdlib folder
(site-packages and caches excluded). A file is held out for evaluation when the first byte of
sha256(relative path) is below 13 (about 5%). Files are joined with a NUL byte, which is also
the engine's end-of-sequence token (`EOS`)."""

from __future__ import annotations

import functools
import hashlib
import os
import sysconfig
from pathlib import Path

EOS = 0
HELD_OUT_BELOW = 13  # of 256: the held-out rule, documented above


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files() -> list[str]:
    """Relative paths of every stdlib `.py` file, sorted."""
    return list(_corpus_files())


def _skipped(rel: str) -> bool:
    return "site-packages" in rel.split("/") or "__pycache__" in rel


@functools.lru_cache(maxsize=1)
def _corpus_files() -> tuple[str, ...]:
    """What `root.rglob("*.py")` finds (names ending in .py, symbolic links to folders not
    followed), less site-packages and caches; a folder that can hold only skipped paths is not
    entered: walking the installed packages under site-packages cost ~3 CPU s a call here,
    for nothing (a process's stdlib does not change, so the list is kept too)."""
    root = stdlib_dir()
    out = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        for name in dirs + files:
            rel = prefix + name
            if name.endswith(".py") and not _skipped(rel):
                out.append(rel)
        dirs[:] = [d for d in dirs if not _skipped(prefix + d)]
    return tuple(sorted(out))


def is_held_out(rel: str) -> bool:
    return hashlib.sha256(rel.encode()).digest()[0] < HELD_OUT_BELOW


def load_split(held_out: bool) -> list[bytes]:
    """File contents (NUL bytes removed) of the training or the held-out split."""
    root = stdlib_dir()
    return [(root / rel).read_bytes().replace(b"\x00", b"")
            for rel in corpus_files() if is_held_out(rel) == held_out]


@functools.lru_cache(maxsize=2)
def joined(held_out: bool) -> bytes:
    return bytes([EOS]).join(load_split(held_out)) + bytes([EOS])
