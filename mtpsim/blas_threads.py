"""One OpenBLAS thread for an mtpsim process, not for the engines it starts.

numpy's OpenBLAS starts one thread per core when numpy is imported, and they cost CPU time at
every start (docs/speed.md, round 8); mtpsim's arrays are elementwise and its fits small, and
its process pools already run one worker per core. The entry point (`mtpsim.cli.main`) calls
`limit()` before anything imports numpy; a caller's own OPENBLAS_NUM_THREADS wins. The setting
is the mtpsim process's (and its forked workers'): the servers and benchmark clients that
`run-real` starts (`vllm serve`, `vllm bench serve`) get the environment the user gave
(`user_environ`), as they would without mtpsim.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

VAR = "OPENBLAS_NUM_THREADS"
THREADS = "1"
_set_by_us = False  # limit() added VAR (the caller had not set it)


def limit() -> None:
    """OPENBLAS_NUM_THREADS=1 for this process unless the caller set it (before numpy loads
    OpenBLAS, which reads it once)."""
    global _set_by_us
    if VAR not in os.environ:
        os.environ[VAR] = THREADS
        _set_by_us = True


def user_environ(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default os.environ) without the OPENBLAS_NUM_THREADS that `limit` added: the
    environment for a program mtpsim starts that is not mtpsim."""
    out = dict(os.environ if env is None else env)
    if _set_by_us and out.get(VAR) == THREADS:
        del out[VAR]
    return out
