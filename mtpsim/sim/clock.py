"""Engine time in a simulation: steps are counted (a *position* is the number of steps run so
far) and priced by the cost model in batches, so that many runs of steps cost one call; the
time at a position is the sum of the step costs (and idle waits) before it. Also the step log.

When no decision needs the time until the end (every request is scheduled at t = 0, so a
request is sent when a slot frees, at a position), the simulator stamps events with positions
and prices all steps once at the end; otherwise it prices each run of steps as it goes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.models.cost import StepShape


@dataclass(slots=True)
class StepLog:
    """Phase seconds summed over steps, and step counts."""

    totals: dict[str, float]
    saved_vs_fresh_s: float = 0.0  # same batches priced under `fresh` minus under this policy
    steps: int = 0
    decode_only_steps: int = 0
    python_iterations: int = 0


class Clock:
    """Positions, their times, and the step log; `cost`/`fresh_cost` price StepShapes."""

    def __init__(self, cost: Any, fresh_cost: Any, log: StepLog) -> None:
        self.cost, self.fresh_cost, self.log = cost, fresh_cost, log
        self.pos = 0
        self._pending: list[StepShape] = []
        self._seconds: list[np.ndarray] = []  # per step, idle waits added to the step after
        self._chunks: list[np.ndarray] = []  # per step, requests that stream a token after it
        self._t = 0.0  # time at `pos` (once pending steps are priced)
        self._idle = 0.0  # waited at `pos` before the next step

    def run(self, shape: StepShape, n: int, decode_only: int,
            phases: dict[str, np.ndarray] | None = None) -> None:
        """The first `n` steps of `shape` (fields: arrays over steps) ran, `decode_only` of them
        without prompt chunks; `phases`: their prices if already known, else priced later."""
        self.log.steps += n
        self.log.decode_only_steps += decode_only
        self.pos += n
        if phases is None:
            self._pending.append(_head(shape, n))
        else:
            self._book(shape, phases, n)

    def now(self) -> float:
        """Seconds at the current position (after any idle wait)."""
        self._flush()
        return self._t + self._idle

    def wait_until(self, t: float) -> None:
        """Nothing runs until `t` (seconds): `now()` is at least `t` after it. The wait counts
        from `_t`, and is rounded up where `_t + (t - _t)` falls short of `t` by an ulp (t more
        than twice `_t`): else the send due at `t` never came due and the loop waited forever."""
        self._flush()
        idle = t - self._t
        while self._t + idle < t:
            idle = math.nextafter(idle, math.inf)
        self._idle = max(self._idle, idle)

    def times(self) -> np.ndarray:
        """[pos + 1] seconds at each position."""
        self._flush()
        return np.concatenate([[0.0], np.cumsum(np.concatenate(self._seconds))]) \
            if self._seconds else np.zeros(1)

    def chunks(self) -> np.ndarray:
        """[pos] output chunks each step streams: one per decoding request, one per completed
        prompt (its first token)."""
        self._flush()
        return np.concatenate(self._chunks) if self._chunks else np.zeros(0)

    def _flush(self) -> None:
        if not self._pending:
            return
        shape = StepShape(**{f.name: np.concatenate([  # a field given as one number: every step's
            np.broadcast_to(np.asarray(getattr(s, f.name), float), np.shape(s.decode_ctx))
            for s in self._pending]) for f in dataclasses.fields(StepShape)})
        self._pending = []
        self._book(shape, self.cost.step(shape), len(shape.decode_ctx))

    def _book(self, shape: StepShape, phases: dict[str, np.ndarray], n: int) -> None:
        for name, v in phases.items():
            self.log.totals[name] += float(v[:n].sum())
        step_s = sum(v[:n] for v in phases.values())
        if self.fresh_cost is not None:
            fresh_s = sum(v[:n] for v in self.fresh_cost.step(shape).values())
            self.log.saved_vs_fresh_s += float(np.sum(fresh_s - step_s))
        seconds = np.array(step_s, float)
        seconds[0] += self._idle
        self._idle = 0.0
        self._seconds.append(seconds)
        self._chunks.append(_steps(shape.num_decode, n) + _steps(shape.prefill_done, n))
        self._t += float(seconds.sum())


def _head(shape: StepShape, n: int) -> StepShape:
    """The first `n` steps of a shape whose fields are arrays over steps."""
    return StepShape(**{f.name: np.asarray(getattr(shape, f.name))[:n]
                        for f in dataclasses.fields(StepShape)})


def _steps(x: Any, n: int) -> np.ndarray:
    """The first `n` steps of a shape field (an array over steps, or one number for all)."""
    a = np.asarray(x, float)
    return np.full(n, float(a)) if a.ndim == 0 else a[:n]
