"""A real sweep's `--out` folder compared point by point: the policy A/B with request-level
bootstrap CIs on the requests of all repeats pooled (repeats run different seeds, so their
requests are independent samples), and the spread of the A/B delta between repeats (each
repeat's A and B ran back to back on one node, so that spread is the run-to-run noise a single
run would carry)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import ResultError
from mtpsim.real_sweep import FORMAT
from mtpsim.result import Result, load_result

# (metric, relative?) whose per-repeat A/B delta the spread reports.
SPREAD_METRICS = (("output_throughput", True), ("median_tpot_ms", True),
                  ("spec_decode_acceptance_length", False))


@dataclass(frozen=True, slots=True)
class SweepPoint:
    point_id: str
    values: dict[str, Any]
    runs: dict[str, dict[int, Result]]  # policy -> repeat -> result


def is_sweep(path: Path) -> bool:
    return path.is_dir() and any((path / "points").glob("*/point.json"))


def load_sweep(path: Path) -> list[SweepPoint]:
    points = []
    for meta_path in sorted((path / "points").glob("*/point.json")):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ResultError(meta_path, None, f"expected a sweep point file ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ResultError(meta_path, "format", f"expected {FORMAT!r}")
        runs: dict[str, dict[int, Result]] = {}
        for f in sorted(meta_path.parent.glob("r*/*.json")):
            if not f.parent.name[1:].isdigit():
                continue
            res = load_result(f)
            runs.setdefault(res.policy or f.stem, {})[int(f.parent.name[1:])] = res
        points.append(SweepPoint(str(meta.get("point_id")), dict(meta.get("values") or {}), runs))
    return points


def pooled(results: list[Result]) -> Result:
    """One result over several repeats: their requests together, scalar metrics averaged."""
    first = results[0]
    metrics: dict[str, Any] = {}
    for k, v in first.metrics.items():
        vals = [r.get(k) for r in results]
        if all(isinstance(x, int | float) and not isinstance(x, bool) for x in vals):
            metrics[k] = sum(vals) / len(vals)
        elif isinstance(v, list) and all(isinstance(x, list) and len(x) == len(v) for x in vals):
            metrics[k] = [sum(col) / len(col) for col in zip(*vals, strict=True)]
    requests = None
    if all(r.requests for r in results):
        requests = [q for r in results for q in r.requests or []]
    return Result(mode=first.mode, policy=first.policy, metrics=metrics, seed=first.seed,
                  experiment=first.experiment, requests=requests)


@dataclass(frozen=True, slots=True)
class Spread:
    metric: str
    relative: bool  # deltas in % of A, else in the metric's units
    deltas: list[float]  # one per repeat that has both policies

    @property
    def mean(self) -> float:
        return sum(self.deltas) / len(self.deltas) if self.deltas else math.nan

    @property
    def sd(self) -> float:
        n = len(self.deltas)
        if n < 2:
            return math.nan
        m = self.mean
        return math.sqrt(sum((d - m) ** 2 for d in self.deltas) / (n - 1))


def repeat_spread(a: dict[int, Result], b: dict[int, Result]) -> list[Spread]:
    out = []
    for key, rel in SPREAD_METRICS:
        deltas = []
        for r in sorted(set(a) & set(b)):
            x, y = a[r].get(key), b[r].get(key)
            if isinstance(x, int | float) and isinstance(y, int | float):
                if rel:
                    if x:
                        deltas.append(100.0 * (y - x) / x)
                else:
                    deltas.append(float(y - x))
        out.append(Spread(key, rel, deltas))
    return out
