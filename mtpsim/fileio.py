"""Atomic file writes: a crash mid-write never leaves a half-written result behind, and a
write that fails (disk full, no permission) is one `UserError` line with no partial file."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from mtpsim.errors import UserError

try:
    import fcntl
except ImportError:  # Windows: the temporaries of killed writes are left in place there
    fcntl = None  # type: ignore[assignment]


def _umask() -> int:
    """The process umask. Linux reports it in /proc; elsewhere it is read by setting it and
    putting it back (os has no getter), which another thread could observe for an instant."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and an atomic rename.
    The file gets the mode a plain `open()` would give it (0666 less the umask), not mkstemp's
    private 0600, so others on a shared machine can read results where the umask lets them."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise UserError(path, None, f"could not write the file ({_reason(e)})") from None
    try:
        _lock(fd, fcntl.LOCK_EX if fcntl else 0)  # held until the rename: this temp file is live
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise UserError(path, None, f"could not write the file ({_reason(e)})") from None
        raise
    _remove_stale_temporaries(path.parent)


_TMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")  # mkstemp(prefix=".NAME.", suffix=".tmp")
_STALE_AFTER_S = 5.0  # covers a live writer between mkstemp and its lock
_swept: set[str] = set()


def _lock(fd: int, how: int) -> bool:
    """flock `fd` without waiting; False where it is held elsewhere or locks are unsupported."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files of writes that were killed before their rename (SIGKILL, a
    power cut): our own naming (`.NAME.XXXXXXXX.tmp`), older than a few seconds and not locked,
    so not held by a live writer. Once per folder and process, after a successful write."""
    key = os.path.abspath(folder)
    if fcntl is None or key in _swept:
        return
    _swept.add(key)
    try:
        with os.scandir(folder) as entries:
            stale = [e.path for e in entries if _TMP.fullmatch(e.name) and e.is_file(follow_symlinks=False)
                     and e.stat(follow_symlinks=False).st_mtime < time.time() - _STALE_AFTER_S]
    except OSError:
        return
    for tmp in stale:
        try:
            fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if _lock(fd, fcntl.LOCK_SH):
                os.unlink(tmp)
        except OSError:
            pass
        finally:
            os.close(fd)


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, dumps(obj, indent=2) + "\n")


def dumps(obj: Any, **kwargs: Any) -> str:
    """The one way mtpsim writes JSON (files and --json): strict, NaN/inf as null (finite_json);
    other objects (numpy numbers) as floats."""
    kwargs.setdefault("default", _number_or_null)
    return json.dumps(finite_json(obj), allow_nan=False, **kwargs)


def _number_or_null(x: Any) -> Any:
    try:
        return finite_json(float(x))
    except (TypeError, ValueError):
        return None


def output_dir(path: str | Path, option: str) -> Path:
    """Create the folder a flag (`option`) names, before any work: a path that cannot be one
    (a file is there, no permission) is a one-line error now, not a traceback after the run."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(option, str(path), f"expected a folder to write into ({_reason(e)})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(option, str(path), "expected a folder to write into (permission denied)")
    return path


def refuse_other_command_outputs(folder: Path, sweep: bool) -> None:
    """A sweep's --out (sweep.json, points/) and a simulate or run-real --out (one result per
    policy) are different folders: written into one another they mixed silently, and `compare
    DIR` then refused the folder. `sweep`: the folder is for a sweep."""
    from mtpsim.policies import NO_MTP, POLICIES

    if not folder.is_dir():
        return
    if sweep:
        held = sorted(p.name for p in folder.glob("*.json") if p.stem in (*POLICIES, NO_MTP))
        if held:
            raise UserError("--out", str(folder), f"expected a sweep's folder or a new one, got one "
                            f"holding simulate or run-real results ({', '.join(held)}): give the "
                            "sweep its own --out")
    elif (folder / "sweep.json").exists() or (folder / "points").is_dir():
        raise UserError("--out", str(folder), "expected a results folder or a new one, got a sweep's "
                        "(sweep.json, points/): give this run its own --out")


def future_dir(path: str | Path, option: str) -> Path:
    """Check, before any work and without creating it, that a folder written only on some
    outcome (advise's --point-dir) could be: its nearest existing ancestor is a writable folder."""
    path = Path(path)
    there = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not there.is_dir():
        raise UserError(option, str(path), f"expected a folder to write into ({there} is a file)")
    if not os.access(there, os.W_OK | os.X_OK):
        raise UserError(option, str(path), "expected a folder to write into (permission denied)")
    return path


def output_file(path: str | Path, option: str) -> Path:
    """Check, before any work, that the file a flag (`option`) names can be written: its folder
    is created and writable, and the path itself is not a folder or another non-file."""
    path = Path(path)
    output_dir(path.parent, option)
    if path.is_symlink() and not path.exists():
        raise UserError(option, str(path), "expected a file to write (a dangling symlink is there)")
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise UserError(option, str(path), f"expected a file to write, got {kind}")
    return path


def finite_json(x: Any) -> Any:
    """NaN/inf -> None (null), so a file is strict JSON (a figure with no data, such as the
    acceptance length of a run without drafts, reads back as missing)."""
    if isinstance(x, dict):
        return {k: finite_json(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [finite_json(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if type(x).__module__ == "numpy" and hasattr(x, "item"):  # numpy scalars and arrays
        return finite_json(x.item() if getattr(x, "ndim", 0) == 0 else x.tolist())
    return x


def portable(path: str | Path | None) -> str | None:
    """A path as a file that may be shipped records it: relative to the checkout when it lies in
    this mtpsim checkout (shipped weights, experiments), else to the working folder when under
    it, else as given; never the absolute path of the machine that wrote it where avoidable."""
    if path is None:
        return None
    p = Path(path)
    if not p.is_absolute():
        return str(path)
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        try:
            return str(p.resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return str(path)
