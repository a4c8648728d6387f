"""File paths a spec field holds (`option(..., path=True)`: `calibration.file`,
`uncertainty.summary`, `reference.weights` unless it names shipped weights): a relative path in
the experiment file is read from that file's folder, one typed on the command line
(`--set calibration.file=runs/cal.json`) from the current folder, as most tools do. The command
line's paths are rewritten relative to the experiment's folder before the spec is read
(`command_line_sets`), so the spec holds what the file would, and every worker or node that
applies the same overrides reads the same file."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path


def path_keys() -> frozenset[str]:
    """The dotted keys of the fields declared `path=True`."""
    return frozenset(_names())


def _names() -> dict[str, tuple[str, ...]]:
    """Each path field's dotted key -> the values of it that are names, not paths."""
    from mtpsim.spec.experiment import SECTIONS

    return {f"{s}.{f.name}": tuple(f.metadata.get("names") or ()) for s, cls in SECTIONS.items()
            for f in fields(cls) if f.metadata.get("path")}


def resolved(source: str, key: str, raw: str) -> str:
    """The value of path field `key` as read: a name (`reference.weights = "small"`) or empty as
    it is, a path from the experiment's folder (from_experiment)."""
    if not raw or raw in _names().get(key, ()):
        return raw
    return str(from_experiment(source, raw))


def from_experiment(source: str, raw: str) -> Path:
    """A path field's value as read: `~` expanded, a relative one from the experiment's folder."""
    p = Path(raw).expanduser()
    if not p.is_absolute() and source not in ("<memory>", ""):
        p = Path(source).parent / p
    return p


def command_line_value(experiment: str | Path, key: str, text: str) -> str:
    """`text`, a `--set key=text` value, with a relative path of a path field rewritten from the
    current folder to the experiment's (other keys and values unchanged)."""
    from mtpsim.errors import SpecError
    from mtpsim.spec.experiment import parse_override

    dotted = ".".join(p.strip() for p in key.split("."))
    if dotted not in path_keys():
        return text
    try:
        value = parse_override(f"{key}={text}")[1]
    except SpecError:
        return text  # refused, naming it, when the spec is read
    if (not isinstance(value, str) or not value or value in _names()[dotted]
            or Path(value).expanduser().is_absolute()):
        return text
    here = os.path.abspath(os.path.expanduser(value))
    return json.dumps(os.path.relpath(here, os.path.abspath(Path(experiment).parent)))


def rebased(source: str | Path, key: str, raw: str, folder: str | Path) -> str:
    """Path field `key`'s value `raw`, read in experiment `source`, written for an experiment file
    in `folder`: relative to `folder` where the two share a folder below the root (a checkout),
    else absolute; a name, an empty or an absolute value as it is."""
    if (not raw or raw in _names().get(key, ()) or Path(raw).expanduser().is_absolute()):
        return raw
    here, there = os.path.abspath(from_experiment(str(source), raw)), os.path.abspath(folder)
    try:
        common = os.path.commonpath([here, there])
    except ValueError:  # other drives
        return here
    return here if Path(common) == Path(common).parent else os.path.relpath(here, there)


def command_line_sets(experiment: str | Path, sets: Sequence[str]) -> list[str]:
    """The `--set` texts of a command line, path fields' relative values taken from the current
    folder (see command_line_value)."""
    out = []
    for text in sets:
        key, sep, value = text.partition("=")
        out.append(f"{key}={command_line_value(experiment, key, value)}" if sep else text)
    return out


def shown(path: Path) -> str:
    """A resolved path as the user can type it here: relative to the current folder when under
    it, else absolute."""
    rel = os.path.relpath(os.path.abspath(path))
    return rel if not rel.startswith("..") else os.path.abspath(path)
