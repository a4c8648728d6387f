"""A grid is validated point by point before anything runs, so its size is bounded: three axes
of 60 values (216,000 points, minutes of validation) are refused at once, in one line."""

from __future__ import annotations

import pytest
from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim import spec
from mtpsim.cli import app
from mtpsim.errors import SpecError
from mtpsim.sweep import MAX_POINTS, build_points


def _axis(key: str, n: int) -> str:
    return f"{key}=" + ",".join(str(v) for v in range(1, n + 1))


def test_a_huge_grid_is_refused_before_validating_its_points(tmp_path, monkeypatch):
    exp = write_small(tmp_path)
    sets = [_axis("workload.num_prompts", 60), _axis("workload.output_len", 60),
            _axis("workload.max_concurrency", 60)]
    loads = []  # every experiment load (the base spec, then one per point) is counted
    real_load = spec.load_experiment
    monkeypatch.setattr(spec, "load_experiment", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    r = CliRunner().invoke(app, ["sweep", str(exp), *[a for s in sets for a in ("--set", s)]])
    assert r.exit_code == 2, r.output
    assert len(loads) <= 1  # refused from the axes' sizes: no point was built or validated
    assert "60 x 60 x 60 = 216,000" in r.output and r.output.count("\n") == 1


def test_the_bound_is_inclusive(tmp_path):
    exp = write_small(tmp_path)
    with pytest.raises(SpecError, match="at most"):
        build_points(exp, [_axis("workload.num_prompts", 64), _axis("workload.output_len", 65)])
    assert MAX_POINTS == 64 * 64
