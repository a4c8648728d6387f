"""A GPU whose KV cache cannot hold one request of the model's default max_model_len (DeepSeek's
163,840 tokens on H20) made `mtpsim advise` refuse with "set engine.max_model_len lower", which a
deployment file could not follow ([engine] is not a section of it, and advise has no --set).
`[deployment] max_model_len` is vLLM's --max-model-len, the refusal names it, and the
measurement's point file runs with it. A context past the model's own maximum says so, not "fits
in GPU memory", and a max_model_len past that maximum is refused (vLLM refuses it)."""

import json

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.runs.advise import cell_sets
from mtpsim.uncertainty.advise import load_deployment

DEP = """
[deployment]
model = "deepseek-v3.2"
gpu = "h20"
tp = {tp}
quantization = "fp8"
max_num_seqs = 64
{extra}
[workload]
context_lengths = {ctx}
concurrency = [4]
output_len = 64
[advise]
k = [1, 2]
draws = 2
"""


def _file(tmp_path, tp=8, extra="", ctx="[1024]"):
    p = tmp_path / "dep.toml"
    p.write_text(DEP.format(tp=tp, extra=extra, ctx=ctx))
    return p


def _refused(p, tmp_path) -> str:
    res = CliRunner().invoke(app, ["advise", str(p), "-j", "1", "--point-dir", str(tmp_path / "pts")],
                             env={"COLUMNS": "400"})
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.output
    return res.stderr


def test_the_refusal_names_the_field_a_deployment_file_has(tmp_path):
    err = _refused(_file(tmp_path), tmp_path)
    assert "max_model_len = 163,840 tokens" in err
    assert "set deployment.max_model_len lower" in err and "engine.max_model_len" not in err


def test_max_model_len_in_the_deployment_lets_the_cells_run_and_the_point_file_keeps_it(tmp_path):
    p = _file(tmp_path, tp=16, extra="max_model_len = 8192")
    res = CliRunner().invoke(app, ["advise", str(p), "-j", "1", "--json",
                                   "--point-dir", str(tmp_path / "pts")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["skipped"] == [] and {r["k"] for r in out["rows"]} == {0, 1, 2}
    # the measurement that would decide it runs at the deployment's max_model_len
    dep = load_deployment(p)
    assert dep.max_model_len == 8192 and "engine.max_model_len=8192" in cell_sets(dep, 2, 1024)
    # without it, the same 16 x H20 holds the default 163,840 tokens: it is what changed the cells
    plain = _file(tmp_path, tp=16)
    assert load_deployment(plain).max_model_len == 0 and not any(
        s.startswith("engine.max_model_len") for s in cell_sets(load_deployment(plain), 2, 1024))


def test_a_shorter_max_model_len_than_the_context_names_the_deployment_field(tmp_path):
    err = _refused(_file(tmp_path, tp=16, extra="max_model_len = 512"), tmp_path)
    assert "that lies within max_model_len; none does" in err and "GPU memory" not in err
    assert ("within max_model_len = 512 (vLLM rejects a longer request; deployment.max_model_len "
            "sets it)") in err


def test_a_context_past_the_models_maximum_says_so(tmp_path):
    err = _refused(_file(tmp_path, tp=16, ctx="[1000000]"), tmp_path)
    assert "that lies within max_model_len; none does" in err and "fits in GPU memory" not in err
    assert "the model's maximum context, model.max_position_embeddings" in err
    assert "sets it" not in err


@pytest.mark.parametrize(("value", "says"), [
    ("900000", "deployment.max_model_len: expected at most deepseek-v3.2's maximum context, "
               "163,840 tokens (its max_position_embeddings: vLLM refuses a longer max_model_len), "
               "got 900,000"),
    ("-1", "deployment.max_model_len: expected an integer >= 0"),
    ('"8k"', "deployment.max_model_len: expected an integer >= 0"),
])
def test_a_bad_max_model_len_is_one_line(tmp_path, value, says):
    p = _file(tmp_path, tp=16, extra=f"max_model_len = {value}")
    assert f"{p}: {says}" in _refused(p, tmp_path)
