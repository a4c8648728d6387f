"""The one line a long command prints when Ctrl-C stops it: what was kept, what was not, and the
command that resumes (printed for the user to run; never executed from here)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def resume_argv(command: str, target: str, out: str | None, options: Sequence[str] = ()) -> list[str]:
    """`mtpsim COMMAND TARGET [--out OUT] OPTIONS...`: the rerun that picks up where this one stopped."""
    return ["mtpsim", command, target, *(["--out", out] if out is not None else []), *options]


def interrupted_line(kept: Sequence[str], lost: Sequence[str], resume: Sequence[str] | None) -> str:
    """E.g. "interrupted: kept fresh (runs/x/fresh.json); not kept: share (in progress: 3/32
    requests done), share_recent (not started); resume: mtpsim run-real exp.toml --out runs/x"."""
    parts = [f"kept {', '.join(kept)}" if kept else "nothing kept"]
    if lost:
        parts.append(f"not kept: {', '.join(lost)}")
    parts.append(f"resume: {shlex.join(resume)}" if resume else
                 "nothing to resume from: rerun with --out DIR to keep finished work")
    return "interrupted: " + "; ".join(parts)
