"""An experiment written back as TOML (a point file `mtpsim advise` hands to run-real): the
validated spec's values, so loading the file gives the same experiment."""

from __future__ import annotations

import json
import math
from typing import Any


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else "nan" if math.isnan(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_value(x)}" for k, x in v.items()
                               if x is not None) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def experiment_toml(d: dict[str, Any], header: str = "") -> str:
    """`d`: Experiment.to_dict() (source and overrides dropped); None values left out."""
    lines = [f"# {ln}" for ln in header.splitlines()]
    for key in ("description", "seed", "policies"):
        if d.get(key) is not None:
            lines.append(f"{key} = {_value(d[key])}")
    for section, table in d.items():
        if not isinstance(table, dict):
            continue
        lines += ["", f"[{section}]"]
        lines += [f"{k} = {_value(v)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"
