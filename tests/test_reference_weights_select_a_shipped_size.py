"""`[reference] weights` selects a shipped model size by name ('builtin' = 'base', 'small',
'large'); a size whose weights are not present is a one-line error naming the field."""

from __future__ import annotations

import pytest
import torch
from _reference_models import tiny_model
from test_run_real_reference_writes_results_and_traces import _setup
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.engine import weights


def test_names_resolve_to_the_shipped_files_and_paths_pass_through(tmp_path):
    assert weights.resolve("builtin") == weights.resolve("base") == weights.BUILTIN
    assert weights.resolve("small").parent == weights.BUILTIN.parent != weights.resolve("large")
    assert weights.resolve(str(tmp_path / "w.safetensors")) == tmp_path / "w.safetensors"
    assert "base" in weights.available()  # the shipped default is always present


@pytest.mark.slow
def test_a_present_size_is_served_and_a_missing_one_is_a_one_line_error(tmp_path, monkeypatch):
    small = tmp_path / "reference-small.safetensors"
    weights.save(tiny_model(vocab=256).float(), small, torch.float16, {"note": "random init"})
    monkeypatch.setitem(weights.NAMED, "small", small)
    monkeypatch.setitem(weights.NAMED, "large", tmp_path / "reference-large.safetensors")
    assert weights.available() == ["base", "small"]
    spec = _setup(tmp_path)
    ok = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(tmp_path / "o"),
                                  "--set", "reference.weights=small", "--set", "policies=['share']"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(tmp_path / "o2"),
                                   "--set", "reference.weights=large"])
    assert bad.exit_code == 2, bad.output
    assert "reference.weights" in bad.output and "'large'" in bad.output
    assert "base, small" in bad.output and "Traceback" not in bad.output
    srv = CliRunner().invoke(app, ["serve-reference", "--weights", "large"])
    assert srv.exit_code == 2 and "'large'" in srv.output and "Traceback" not in srv.output
