"""The saved `--uncertainty` summary of a spec (`uncertainty.summary`) that simulate quotes first
(mtpsim/report/headline.py words it): where it is, the decisive share-vs-fresh delta it holds,
and the measured delta beside it.

The summary records a fingerprint of the experiment file it was made from; a file changed since,
or a --set that changes what is simulated (any role but runner and label, mtpsim.spec.roles),
gets no quoted interval, only the command that makes one. numpy-free.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mtpsim.spec import Experiment

DECISIVE = "output_throughput"


def fingerprint(exp: Experiment) -> str:
    """sha256 of the experiment file's text: the saved summary is of this file as written (a new
    spec default elsewhere does not invalidate it; a changed model does, through the test that
    reruns the shipped summary)."""
    try:
        text = Path(exp.source).read_bytes()
    except OSError:
        text = json.dumps(exp.to_dict(), sort_keys=True).encode()
    return hashlib.sha256(text).hexdigest()


def summary_path(exp: Experiment) -> Path | None:
    raw = exp.uncertainty.summary
    if not raw:
        return None
    from mtpsim.spec.paths import from_experiment

    return from_experiment(exp.source, raw)


def measured_delta(exp: Experiment, policy: str, base: str) -> float | None:
    rows = exp.calibration.measured
    a, b = rows.get(base, {}).get(DECISIVE), rows.get(policy, {}).get(DECISIVE)
    if isinstance(a, int | float) and isinstance(b, int | float) and a:
        return 100.0 * (b / a - 1)
    return None


def saved_interval(exp: Experiment, policy: str, overridden: bool) -> dict[str, Any] | str:
    from mtpsim.uncertainty.intervals import Interval, verdict

    path = summary_path(exp)
    if path is None:
        return "no uncertainty.summary in the spec"
    if overridden:
        return "--set changed the spec"
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{path} unreadable"
    if obj.get("spec_sha256") != fingerprint(exp):
        return f"{path} was made from other settings"
    which = "all measured rows" if "all measured rows" in obj.get("summary", {}) else "prior"
    try:
        d = obj["summary"][which]["deltas"][policy][DECISIVE]
        iv = Interval(d["median"], d["lo"], d["hi"], d.get("p_pos", float("nan")),
                      half=d.get("region", float("nan")))
    except (KeyError, TypeError):
        return f"{path} holds no {policy} delta"
    eff = obj.get("effective_draws", {}).get(which, obj.get("draws_n", 0))
    return {"iv": {**d, "verdict": verdict(iv, policy, exp.policies[0], DECISIVE, exp.k)},
            "draws": obj.get("draws_n"), "eff": eff, "prob": obj.get("interval", 0.9),
            "which": "conditioned on the measured rows" if which != "prior" else "priors only",
            "path": _shown(path)}


def _shown(path: Path) -> str:
    import os

    rel = os.path.relpath(path.resolve())
    return rel if not rel.startswith("..") else str(path.resolve())
