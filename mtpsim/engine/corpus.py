"""The offline corpus: the running Python's standard-library `.py` files as bytes.

Deterministic on a given Python: files sorted by path relative to the stdlib folder
(site-packages and caches excluded). A file is held out for evaluation when the first byte of
sha256(relative path) is below 13 (about 5%). Files are joined with a NUL byte, which is also
the engine's end-of-sequence token (`EOS`)."""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

EOS = 0
HELD_OUT_BELOW = 13  # of 256: the held-out rule, documented above


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files() -> list[str]:
    """Relative paths of every stdlib `.py` file, sorted."""
    root = stdlib_dir()
    out = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if "site-packages" in rel.split("/") or "__pycache__" in rel:
            continue
        out.append(rel)
    return sorted(out)


def is_held_out(rel: str) -> bool:
    return hashlib.sha256(rel.encode()).digest()[0] < HELD_OUT_BELOW


def load_split(held_out: bool) -> list[bytes]:
    """File contents (NUL bytes removed) of the training or the held-out split."""
    root = stdlib_dir()
    return [(root / rel).read_bytes().replace(b"\x00", b"")
            for rel in corpus_files() if is_held_out(rel) == held_out]


def joined(held_out: bool) -> bytes:
    return bytes([EOS]).join(load_split(held_out)) + bytes([EOS])
