"""The recorder's last flush, in every way a vLLM process ends.

vLLM starts its engine core and workers with `multiprocessing`; a forked child leaves through
`os._exit`, which skips `atexit`, so a recorder relying on it lost up to FLUSH_EVERY_S of counts
and trace rows. Every multiprocessing child does run `multiprocessing.util`'s finalizers first,
also when vLLM's SIGTERM handler turns the signal into SystemExit; but the child clears the
finalizers it inherited, so they are armed again after each fork. A process killed outright
(SIGKILL) runs nothing: its counts file stays not final and the runner marks its trace
truncated.
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import os
import weakref
from typing import Protocol


class Closable(Protocol):
    def close(self) -> None: ...

    def forked(self) -> None: ...


_ARMED: weakref.WeakSet[Closable] = weakref.WeakSet()


def _close(rec: Closable) -> None:
    if rec in _ARMED:
        rec.close()


def _forked(rec: Closable) -> None:
    if rec in _ARMED:
        rec.forked()


def _finalizer(rec: Closable) -> None:
    if rec in _ARMED:
        multiprocessing.util.Finalize(None, _close, args=(rec,), exitpriority=100)


def arm(rec: Closable) -> None:
    """Flush `rec` at the end of this process and of every process forked from it."""
    _ARMED.add(rec)
    atexit.register(_close, rec)  # the main process; spawned children leave via sys.exit
    _finalizer(rec)  # multiprocessing children: normal return or SystemExit
    ref = weakref.ref(rec)
    os.register_at_fork(after_in_child=lambda: (r := ref()) is not None and _forked(r))
    # Runs after a multiprocessing child cleared the finalizers it inherited.
    multiprocessing.util.register_after_fork(rec, _finalizer)


def disarm(rec: Closable) -> None:
    """Stop flushing `rec` at exit, here and in later forks (tests uninstall the plugin)."""
    _ARMED.discard(rec)
