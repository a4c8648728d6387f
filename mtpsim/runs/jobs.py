"""The job protocol both executor backends keep (mtpsim.runs.executor, local workers;
mtpsim.runs.executor_ray, Ray tasks): where a batch runs (`Pool`), what a placed job asks of a node
(`Placement`), a job that failed (`Failed`), resumable results (`Store`), and one job's attempt
and answer (`attempt`, `settle`), so a job reads the same on either backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from mtpsim.dataclass import dataclass
from mtpsim.errors import JobError, UserError, one_line

S = TypeVar("S")
J = TypeVar("J")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Pool:
    """Where a batch runs: `workers` processes here, or Ray tasks on `nodes` (the cluster's, from
    mtpsim.cluster.connect). `retries`: reruns of a failed job before it counts as failed."""

    workers: int = 1
    nodes: tuple[Any, ...] | None = None
    retries: int = 0

    @property
    def on_ray(self) -> bool:
        return self.nodes is not None

    @property
    def shares_files(self) -> bool:
        """Whether the jobs see the driver's files (Ray nodes may not: ship data, not paths)."""
        return self.nodes is None

    @property
    def size(self) -> int:
        """How many jobs run at once: the workers, or the cluster's CPUs."""
        if self.nodes is None:
            return max(1, self.workers)
        return max(1, int(sum(n.cpus for n in self.nodes)))


def as_pool(pool: int | Pool) -> Pool:
    """A worker count is a local pool."""
    return pool if isinstance(pool, Pool) else Pool(workers=pool)


@dataclass(frozen=True, slots=True)
class Placement:
    """What one job asks of a Ray node; a job with a placement is a Ray task of its own."""

    cpus: float = 1.0
    gpus: float = 0.0
    name: str = ""  # the task's name (its worker's process title is ray::<name>)


@dataclass(frozen=True, slots=True)
class Failed:
    """A job that failed after its retries, yielded in its result's place with `keep_going`."""

    reason: str  # one line: "<exception type>: <its first line>"


class Store(Protocol[J, R]):
    """Resumable results, one per item (e.g. a sweep's point files)."""

    def load(self, item: J) -> R | None:
        """The item's finished result, or None (run it)."""

    def save(self, item: J, result: R) -> None:
        """Keep a new result (called on the driver, as it arrives)."""


def reason(e: BaseException) -> str:
    """One line: the exception's type and the first line of its text."""
    text = str(e).strip().splitlines()
    return one_line(f"{type(e).__name__}" + (f": {text[0]}" if text else ""))


def settle(i: int, total: int, kind: str, value: Any, keep_going: bool) -> Any:
    """A job's answer as the caller sees it: ("ok", result) is the result; ("user", UserError)
    raises it; ("failed", reason) is a Failed or raises a JobError naming the job."""
    if kind == "ok":
        return value
    if kind == "user":
        raise value
    if keep_going:
        return Failed(value)
    raise JobError(f"job {i + 1} of {total} failed: {value}")


def attempt(fn: Callable[[S, J], R], shared: S, item: J, retries: int) -> tuple[str, Any]:
    """Run one job, rerunning it `retries` times if it raises: ("ok", result), ("user", the
    UserError: bad input is not rerun, unless `transient`) or ("failed", the last reason)."""
    failures = 0
    while True:
        try:
            return "ok", fn(shared, item)
        except UserError as e:  # crosses a process boundary as itself (it pickles its parts)
            if not e.transient:
                return "user", e
            last: Exception = e
        except Exception as e:  # noqa: BLE001 - any other failure: rerun, then one line
            last = e
        failures += 1
        if failures > retries:
            return "failed", reason(last)
