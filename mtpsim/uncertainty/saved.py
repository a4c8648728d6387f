"""The saved `--uncertainty` summary of a spec (`uncertainty.summary`) that simulate quotes first
(mtpsim/report/headline.py words it): where it is, the decisive share-vs-fresh delta it holds,
and the measured delta beside it.

The summary records a fingerprint of the experiment file it was made from (what it sets, less
labels and runner settings: whitespace, comments and a new description keep it); a file changed since,
or a --set that changes what is simulated (any role but runner and label, mtpsim.spec.roles),
gets no quoted interval, only the command that makes one. numpy-free.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mtpsim.errors import SpecError
from mtpsim.spec import Experiment

DECISIVE = "output_throughput"


def fingerprint(exp: Experiment) -> str:
    """sha256 of what the experiment file sets that the summary depends on: its TOML as data
    (so whitespace, comments and key order do not count) less its label and runner fields
    (description, `uncertainty.summary`, [reference], [vllm]: mtpsim.spec.roles), with the
    content of a `calibration.file` it names. The summary is of this file as written: a new spec
    default or preset elsewhere does not invalidate it (a changed model does, through the test
    that reruns the shipped summary). A spec with no readable file: its resolved content."""
    from mtpsim.spec.experiment import read_toml
    from mtpsim.spec.roles import UNSIMULATED, without_roles

    try:
        tree = read_toml(Path(exp.source), "experiment file")
    except SpecError:
        tree = exp.to_dict()
        tree.pop("source", None)
        tree.pop("overrides", None)
    keyed: dict[str, Any] = {"spec": without_roles(tree, UNSIMULATED)}
    if exp.calibration.file:
        from mtpsim.spec.paths import from_experiment

        try:
            cal = from_experiment(exp.source, exp.calibration.file).read_bytes()
            keyed["calibration_file_sha256"] = hashlib.sha256(cal).hexdigest()
        except OSError:
            keyed["calibration_file_sha256"] = None
    text = json.dumps(keyed, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def file_sha256(exp: Experiment) -> str | None:
    """sha256 of the experiment file's bytes: the fingerprint summaries made before
    `spec_content_sha256` recorded (still honoured: the same bytes are the same spec)."""
    try:
        return hashlib.sha256(Path(exp.source).read_bytes()).hexdigest()
    except OSError:
        return None


def made_from(obj: dict[str, Any], exp: Experiment) -> bool:
    """Whether the saved summary `obj` was made from this spec."""
    if "spec_content_sha256" in obj:
        return obj["spec_content_sha256"] == fingerprint(exp)
    return obj.get("spec_sha256") is not None and obj.get("spec_sha256") == file_sha256(exp)


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
        return "a flag or --set changed what the file simulates"
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{path} unreadable"
    if not isinstance(obj, dict) or not made_from(obj, exp):
        return f"{path} was made from other settings"
    summary = obj.get("summary")
    which = "all measured rows" if isinstance(summary, dict) and "all measured rows" in summary \
        else "prior"
    try:
        d = obj["summary"][which]["deltas"][policy][DECISIVE]
        iv = Interval(d["median"], d["lo"], d["hi"], d.get("p_pos", float("nan")),
                      half=d.get("region", float("nan")))
        if not all(isinstance(x, int | float) for x in (iv.median, iv.lo, iv.hi)):
            raise TypeError
    except (KeyError, TypeError, AttributeError):
        return f"{path} holds no {policy} delta"
    effective = obj.get("effective_draws")
    eff = (effective if isinstance(effective, dict) else {}).get(which, obj.get("draws_n", 0))
    return {"iv": {**d, "verdict": verdict(iv, policy, exp.policies[0], DECISIVE, exp.k)},
            "draws": obj.get("draws_n"), "eff": eff, "prob": obj.get("interval", 0.9),
            "which": "conditioned on the measured rows" if which != "prior" else "priors only",
            "path": _shown(path)}


def _shown(path: Path) -> str:
    import os

    rel = os.path.relpath(path.resolve())
    return rel if not rel.startswith("..") else str(path.resolve())
