"""Bootstrap refits of a calibration: its parameter uncertainty, from the traces it was fitted to.

- Acceptance and top-k overlap: requests are the independent units (a request's drafts share a
  prompt and a context), so each refit resamples request ids with replacement, the same ids in
  every trace (the reference engine serves the same prompts under every policy and round, so a
  hard prompt stays paired across policies); a request drawn twice enters twice, under two ids.
- Step cost: steps of one run share the machine's state, so each trace is cut into contiguous
  blocks and blocks are resampled with replacement within each policy (with several rounds this
  is mostly the round-to-round spread of the machine).
Each refit stores what the simulator reads (fits without their reports) in the calibration
file's `bootstrap` list; `--uncertainty N` draws one refit per draw.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mtpsim.trace import Trace

BLOCKS = 4  # contiguous blocks per trace for the step-cost resampling


def _request_resample(traces: Sequence[Trace], rng: np.random.Generator) -> list[Trace]:
    ids = sorted({r.id for tr in traces for st in tr.steps for r in st.requests})
    picked = rng.choice(len(ids), size=len(ids), replace=True)
    mult = dict(zip(ids, np.bincount(picked, minlength=len(ids)).tolist(), strict=True))
    out = []
    for tr in traces:
        steps = []
        for st in tr.steps:
            reqs = [dataclasses.replace(r, id=f"{r.id}#{c}") for r in st.requests
                    for c in range(mult[r.id])]
            steps.append(dataclasses.replace(st, requests=reqs))
        out.append(dataclasses.replace(tr, steps=steps))
    return out


def _blocks(tr: Trace) -> list[Trace]:
    n = len(tr.steps)
    cuts = np.linspace(0, n, BLOCKS + 1).astype(int)
    return [dataclasses.replace(tr, steps=tr.steps[a:b]) for a, b in zip(cuts[:-1], cuts[1:],
                                                                          strict=True) if b > a]


def _block_resample(traces: Sequence[Trace], rng: np.random.Generator) -> list[Trace]:
    by_policy: dict[str, list[Trace]] = {}
    for tr in traces:
        by_policy.setdefault(tr.policy, []).extend(_blocks(tr))
    out = []
    for blocks in by_policy.values():
        out += [blocks[i] for i in rng.integers(0, len(blocks), len(blocks))]
    return out


def _strip(fit: Any) -> dict[str, Any]:
    d = dataclasses.asdict(fit)
    d["report"] = {}
    return d


def refit(traces: Sequence[Trace], rng: np.random.Generator, indexer_keys: str = "own",
          draft_calls: str = "shared") -> dict[str, Any]:
    """One bootstrap refit: {"acceptance", "overlap", "cost"} as the calibration file has them
    (the step cost counting the indexer's keys as `indexer_keys` and pricing the draft calls as
    `draft_calls`: mtpsim.calibration.fit.fit_cost)."""
    from mtpsim.calibration.fit import fit_acceptance, fit_cost, fit_overlap

    boot = _request_resample(traces, rng)
    return {"acceptance": _strip(fit_acceptance(boot)), "overlap": _strip(fit_overlap(boot)),
            "cost": _strip(fit_cost(_block_resample(traces, rng), indexer_keys, draft_calls))}


def with_bootstrap(cal: Any, traces: Sequence[Trace], n: int, seed: int = 0,
                   progress: Callable[[int, int], None] | None = None) -> Any:
    """`cal` with `n` bootstrap refits from `traces` (the ones it was fitted to), their step cost
    counting the indexer's keys as `cal`'s does."""
    from mtpsim.calibration.fit import draft_calls_of

    rng = np.random.default_rng(seed)
    calls = draft_calls_of(cal.cost)
    refits = []
    for i in range(n):
        refits.append(refit(traces, rng, cal.cost.indexer_keys, calls))
        if progress is not None:
            progress(i + 1, n)
    return dataclasses.replace(cal, bootstrap=refits)


