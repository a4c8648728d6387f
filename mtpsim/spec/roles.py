"""Which `--set` overrides change the measured setup (workload, engine, model, GPU), and which
change what a simulation computes, read from the role each spec field declares
(mtpsim.spec.fields.ROLES): overriding any role but setup leaves measured rows valid; overriding
a runner or label field leaves a simulation, and a saved --uncertainty summary of it, as it was."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from mtpsim.spec.experiment import SECTIONS, TOP_LEVEL, Experiment
from mtpsim.spec.fields import role_of


def key_role(key: str) -> str:
    """The role of a dotted `--set` key (`workload.input_len`, `seed`, a deeper key such as
    `calibration.measured.fresh.x` takes its field's role; a whole section is setup if any of its
    fields is). A key the spec does not declare is "setup": loading the spec refuses it anyway."""
    parts = [p.strip() for p in key.split(".")]
    head = parts[0]
    if head in TOP_LEVEL and len(parts) == 1:
        return role_of(Experiment, head)
    cls = SECTIONS.get(head)
    if cls is None:
        return "setup"
    if len(parts) == 1:
        roles = {role_of(cls, f.name) for f in fields(cls)}
        return "setup" if "setup" in roles else cls.ROLE
    try:
        return role_of(cls, parts[1])
    except KeyError:
        return "setup"


def setup_overrides(sets: list[str]) -> list[str]:
    """The `--set` overrides that change the measured setup (workload, engine, model, GPU)."""
    return [o for o in sets if key_role(o.split("=")[0]) == "setup"]


# Roles a simulation does not read: real mode's launch settings, and text.
UNSIMULATED = ("runner", "label")


def simulated_overrides(sets: list[str]) -> list[str]:
    """The `--set` overrides that change what a simulation computes or how it draws (setup,
    model, prior, seed, policies): all but runner and label fields."""
    return [o for o in sets if key_role(o.split("=")[0]) not in UNSIMULATED]


def without_roles(tree: dict[str, Any], drop: Sequence[str]) -> dict[str, Any]:
    """A spec as nested dicts (an Experiment's `to_dict()`, or an experiment file's TOML) less the
    fields whose role is in `drop` (a section left empty goes too): what a result computed from
    it is keyed by, so that editing a label (or, for a simulation, a runner field) reuses it."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if key in SECTIONS and isinstance(value, dict):
            kept = {k: v for k, v in value.items() if key_role(f"{key}.{k}") not in drop}
            if kept:
                out[key] = kept
        elif key in SECTIONS or key_role(key) not in drop:
            out[key] = value
    return out
