"""Reading user input files safely: the one place every reader (spec, trace, result,
calibration) opens a file, so that the file system's surprises end in one `UserError` line.

- Only a regular file is read: a folder, a FIFO, a device or a socket is refused (a FIFO is
  opened non-blocking and checked with fstat, so it never hangs), as are symlink loops,
  unreadable files and files over a size bound.
- JSON is strict: no NaN/Infinity, no integers beyond float range, nesting bounded (deep
  nesting would otherwise end in a RecursionError).
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from mtpsim.errors import UserError

MAX_NESTING = 32  # deepest list/object nesting any mtpsim file uses is 5
MiB = 2**20


def read_text(path: str | Path, error: type[UserError], what: str, max_bytes: int) -> str:
    """The UTF-8 text of the regular file at `path`, or `error(path, None, ...)` in one line."""
    path = Path(path)
    fd = _open_regular(path, error, what, max_bytes)
    try:
        with os.fdopen(fd, "rb", closefd=True) as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise error(path, None, f"expected a readable {what} ({_reason(e)})") from None
    if len(data) > max_bytes:
        raise error(path, None, f"expected {_a(what)} of at most {max_bytes // MiB} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(path, None, f"expected a UTF-8 text {what} ({e.reason} at byte {e.start})") \
            from None


def _a(what: str) -> str:
    """`what` with its indefinite article ("an experiment file", "a trace file")."""
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def check_file(path: str | Path, error: type[UserError], what: str, max_bytes: int) -> None:
    """Refuse what `read_text` refuses (no such file, not a regular file, unreadable, too big)
    without reading it: for binary files that a library then opens."""
    os.close(_open_regular(Path(path), error, what, max_bytes))


def _open_regular(path: Path, error: type[UserError], what: str, max_bytes: int) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise error(path, None, f"{what} not found") from None
    except OSError as e:
        raise error(path, None, f"expected a readable {what} ({_reason(e)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise error(path, None, f"expected {_a(what)}, got {kind}")
        if st.st_size > max_bytes:
            raise error(path, None, f"expected {_a(what)} of at most {max_bytes // MiB} MiB, "
                        f"got {st.st_size / MiB:.0f} MiB")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is out of range for a number")
    return x


def loads_json(text: str, source: str | Path, error: type[UserError], where: str | None = None) -> Any:
    """Strict JSON: NaN, Infinity, numbers out of float range and nesting beyond MAX_NESTING
    are refused with `error(source, where, ...)`."""
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise error(source, where, f"expected JSON nested at most {MAX_NESTING} deep") from None
    except json.JSONDecodeError as e:
        raise error(source, where, f"expected JSON ({e.msg} at line {e.lineno} column {e.colno})") \
            from None
    except ValueError as e:  # NaN/Infinity, huge numbers, integers with too many digits
        raise error(source, where, f"expected JSON with finite numbers ({e})") from None
    check_nesting(obj, source, error, where)
    return obj


def check_nesting(obj: Any, source: str | Path, error: type[UserError], where: str | None = None,
                  finite: bool = True) -> None:
    """Refuse lists/objects nested deeper than MAX_NESTING (walked without recursion), integers
    beyond 64 bits and, if `finite`, numbers that are not finite (TOML may say `inf`)."""
    limit = MAX_NESTING
    stack: list[tuple[Any, int, str]] = [(obj, 1, "")]  # node, depth, its key path ("a.b[2]")
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                raise error(source, where, f"expected data nested at most {limit} deep")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, depth + 1, _key_path(path, k)) for k, v in items)
        elif finite and isinstance(node, float) and not math.isfinite(node):
            raise error(source, _field(where, path), f"expected a finite number, got {node}")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > 2**63:
            raise error(source, _field(where, path), "expected an integer of at most 19 digits, "
                        f"got {len(str(abs(node)))} digits")


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _field(where: str | None, path: str) -> str | None:
    """The field of a value at key path `path` inside the part `where` names (e.g. "line 3")."""
    return ": ".join(p for p in (where, path) if p) or None
