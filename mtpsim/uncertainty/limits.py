"""Caps on how much work one uncertainty command may ask for: a typo (an extra zero, 2**70)
must end in one line, not in hours of simulation or a memory error. Like sweep's 4,096 points,
each cap is far past any use here (docs/uncertainty.md)."""

from __future__ import annotations

from mtpsim.errors import UserError

MAX_DRAWS = 4096  # parameter draws of one run (a 90 % interval is stable from ~64)
MAX_SIMULATIONS = 100_000  # draws x points (or cells) x policies of one command
MAX_CELLS = 1024  # advise: k x contexts x concurrencies


def check_draws(n: int, flag: str, source: str | None = None) -> None:
    if not 2 <= n <= MAX_DRAWS:
        raise UserError(source, flag, f"expected 2..{MAX_DRAWS:,} draws, got {n:,}")


def check_simulations(draws: int, units: int, policies: int, flag: str, what: str,
                      source: str | None = None) -> None:
    """draws x units (x policies, where known) simulations at most MAX_SIMULATIONS."""
    total = draws * units * policies
    if total > MAX_SIMULATIONS:
        per = f" x {policies} policies" if policies > 1 else ""
        raise UserError(source, flag, f"expected at most {MAX_SIMULATIONS:,} simulation runs, got "
                        f"{draws:,} draws x {units:,} {what}{per} = {total:,}; fewer draws or a "
                        "smaller grid")
