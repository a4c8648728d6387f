"""`reference.weights` as a relative path is read as every path in a spec is (mtpsim.spec.paths):
from the experiment file's folder when the file holds it, from the current folder when a `--set`
does; a shipped size's name ("small") is a name, never a path."""

from __future__ import annotations

import shutil

import pytest

from mtpsim.engine import weights
from mtpsim.engine.runner import weights_path
from mtpsim.serve_reference.server import TINY_RANDOM
from mtpsim.spec import load_experiment
from mtpsim.spec.paths import command_line_sets
from mtpsim.vllm_runner.argv import reference_serve_argv

SPEC = """
[engine]
scheduler = "reference"
[speculative]
num_speculative_tokens = 3
index_topk = 16
[workload]
num_prompts = 4
input_len = 64
output_len = 8
request_rate = inf
[reference]
weights = "w/mine.safetensors"
device = "cpu"
"""


@pytest.fixture
def layout(tmp_path, monkeypatch):
    folder, elsewhere = tmp_path / "specs", tmp_path / "elsewhere"
    (folder / "w").mkdir(parents=True)
    elsewhere.mkdir()
    shutil.copy(weights.BUILTIN, folder / "w/mine.safetensors")
    shutil.copy(weights.sidecar(weights.BUILTIN), folder / "w/mine.json")
    (folder / "exp.toml").write_text(SPEC)
    monkeypatch.chdir(elsewhere)
    return folder


def test_a_relative_path_in_the_file_is_read_from_the_files_folder(layout):
    exp = load_experiment(layout / "exp.toml")
    assert weights_path(exp).resolve() == (layout / "w/mine.safetensors").resolve()
    argv = reference_serve_argv(exp, "fresh", 8000)
    got = argv[argv.index("--weights") + 1]
    assert (layout / "w/mine.safetensors").resolve().samefile(got)


def test_a_relative_path_in_a_set_is_read_from_the_current_folder(layout, tmp_path):
    (tmp_path / "elsewhere/x").mkdir()
    for suffix in (".safetensors", ".json"):
        shutil.copy(layout / f"w/mine{suffix}", tmp_path / f"elsewhere/x/other{suffix}")
    sets = command_line_sets(layout / "exp.toml", ["reference.weights=x/other.safetensors"])
    exp = load_experiment(layout / "exp.toml", sets)
    assert weights_path(exp).resolve() == (tmp_path / "elsewhere/x/other.safetensors").resolve()


def test_a_shipped_size_is_a_name_not_a_path(layout):
    assert command_line_sets(layout / "exp.toml", ["reference.weights=base"]) == ["reference.weights=base"]
    exp = load_experiment(layout / "exp.toml", ["reference.weights=base"])
    assert weights_path(exp) == weights.BUILTIN
    from mtpsim.spec.sections import REFERENCE_WEIGHT_NAMES

    assert set(REFERENCE_WEIGHT_NAMES) == {*weights.NAMED, TINY_RANDOM}


def test_a_missing_path_names_where_it_was_set_and_where_it_was_looked_for(layout):
    from mtpsim.errors import SpecError

    sets = command_line_sets(layout / "exp.toml", ["reference.weights=gone.safetensors"])
    with pytest.raises(SpecError) as typed:
        weights_path(load_experiment(layout / "exp.toml", sets))
    assert str(typed.value.source) == "--set" and "got 'gone.safetensors'" in typed.value.expected
    (layout / "w/mine.json").unlink()
    with pytest.raises(SpecError) as written:
        weights_path(load_experiment(layout / "exp.toml"))
    assert str(written.value.source) == str(layout / "exp.toml")
    assert "got 'w/mine.safetensors', which is " in written.value.expected
    assert "from the experiment file's folder" in written.value.expected
