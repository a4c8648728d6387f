"""The step-cost fit option `indexer_keys` (mtpsim.models.cost.INDEXER_KEYS, default "own"):
"padded" counts every decoding and drafting request's indexer keys at its batch's longest context
(the reference engine's batched indexer: `n_keys = input_pos.max() + 1`). The file records it,
the pricing of traced and simulated steps follows it, and it reproduces the post-hoc candidate of
docs/uncertainty.md §19 (benchmarks/shape_development_v15.py, `padded_indexer`)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from _synthetic_traces import write_policy_traces
from typer.testing import CliRunner

from mtpsim.calibration import read_calibration
from mtpsim.calibration.fit import fit_cost, fit_traces, padded_quantities, step_quantities
from mtpsim.cli import app
from mtpsim.models.cost import StepShape, padded
from mtpsim.models.fitted import FittedCost
from mtpsim.result import PHASES
from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"

EXPERIMENT = """
description = "calibrated"
seed = 3
policies = ["fresh"]
[engine]
scheduler = "reference"
[speculative]
num_speculative_tokens = 3
index_topk = 64
[workload]
num_prompts = 6
input_len = 400
output_len = 40
max_concurrency = 2
[calibration]
file = "cal.json"
"""


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    return write_policy_traces(d, n_requests=30)


@pytest.fixture(scope="module")
def fitted(traces):
    from mtpsim.trace import read_trace

    trs = [read_trace(p) for p in traces]
    return {keys: fit_traces(trs, [str(p) for p in traces], indexer_keys=keys)
            for keys in ("own", "padded")}


def run(args):
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def _one_line(res, *words):
    lines = [ln for ln in res.output.strip().splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "Traceback" not in res.output, res.output
    assert all(w in lines[0] for w in words), lines[0]


@pytest.mark.slow  # reads v14's 24 calibration traces and refits the step cost 5 times (~20 s)
def test_the_padded_fit_on_v14_reproduces_the_v15_development_candidate():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import level_development as ld

    from mtpsim.calibration.fit import measure_shift
    from mtpsim.calibration.normalise import normalised

    v14, _ = normalised(ld.slice_traces(DATA / "heldout-v14" / "calibrate")[1], "level")
    base = read_calibration(DATA / "heldout-v14" / "calibration-bootstrap.json")
    stored = json.loads((DATA / "shape-development-v15.json").read_text())["candidates"]
    for keys, name in (("own", "as_shipped"), ("padded", "padded_indexer")):
        cal = dataclasses.replace(base, cost=fit_cost(v14, keys))
        assert cal.cost.indexer_keys == keys
        ws = measure_shift(cal, v14)
        want = stored[name]["v14"]
        assert ws.decode_sd == pytest.approx(want["decode_sd"], rel=1e-9)
        assert ws.prefill_sd == pytest.approx(want["prefill_sd"], rel=1e-9)
        for kind, row in ws.kinds.items():
            assert row["decode"] == pytest.approx(want["kinds"][kind.removeprefix("calibrate-")]["decode"],
                                                  rel=1e-9)
    # the figures §19 reports: 0.080 as shipped, 0.058 padded (not <= 0.055: not adopted)
    assert round(stored["as_shipped"]["v14"]["decode_sd"], 3) == 0.080
    assert round(stored["padded_indexer"]["v14"]["decode_sd"], 3) == 0.058


def test_padded_quantities_count_every_batch_request_at_the_longest_context(traces):
    from mtpsim.trace import read_trace

    tr = read_trace(traces[0])
    own, _ = step_quantities(tr)
    pad, _ = padded_quantities(tr)
    j = next(j for j, st in enumerate(tr.steps)
             if len({r.context_len for r in st.requests}) > 1)  # a batch of unequal contexts
    ctx = [r.context_len for r in tr.steps[j].requests]
    assert own.decode_ctx[j] == sum(ctx)
    assert pad.decode_ctx[j] == len(ctx) * max(ctx) > own.decode_ctx[j]
    assert np.all(pad.draft_ctx >= own.draft_ctx) and np.all(pad.decode_keys == own.decode_keys)
    assert np.array_equal(padded(pad).decode_ctx, pad.decode_ctx)  # once is all


def test_the_calibration_records_the_option_and_reads_back_equal(tmp_path, fitted):
    cal = fitted["padded"]
    assert cal.cost.indexer_keys == "padded" and fitted["own"].cost.indexer_keys == "own"
    cal.write(tmp_path / "cal.json")
    assert json.loads((tmp_path / "cal.json").read_text())["cost"]["indexer_keys"] == "padded"
    back = read_calibration(tmp_path / "cal.json")
    assert back.cost.indexer_keys == "padded"
    assert back.to_json() == json.loads(json.dumps(cal.to_json()))


def test_a_file_without_the_field_reads_as_own(tmp_path, fitted):
    obj = fitted["own"].to_json()
    del obj["cost"]["indexer_keys"]
    (tmp_path / "old.json").write_text(json.dumps(obj))
    assert read_calibration(tmp_path / "old.json").cost.indexer_keys == "own"
    shipped = DATA / "heldout-v14" / "calibration-bootstrap.json"
    assert "indexer_keys" not in json.loads(shipped.read_text())["cost"]
    assert read_calibration(shipped).cost.indexer_keys == "own"


def test_the_bootstrap_refits_count_the_keys_as_the_file_does(traces, fitted):
    from mtpsim.trace import read_trace
    from mtpsim.uncertainty.bootstrap import with_bootstrap
    from mtpsim.uncertainty.draws import replicate_calibration

    cal = with_bootstrap(fitted["padded"], [read_trace(p) for p in traces], 2)
    assert [r["cost"]["indexer_keys"] for r in cal.bootstrap] == ["padded", "padded"]
    assert replicate_calibration(cal, 1).cost.indexer_keys == "padded"


def test_a_traced_step_is_priced_with_the_quantities_the_fit_used(traces, fitted):
    from mtpsim.trace import read_trace

    tr = read_trace(traces[0])
    own_cal = fitted["own"]
    same_coef = dataclasses.replace(own_cal, cost=dataclasses.replace(own_cal.cost, indexer_keys="padded"))
    q, _ = step_quantities(tr)
    args = (tr.policy, tr.num_speculative_tokens, tr.index_topk)
    a = FittedCost(same_coef, *args).priced(q)
    b = FittedCost(own_cal, *args).priced(padded_quantities(tr)[0])
    for p in PHASES:
        assert np.array_equal(a[p], b[p])


def _duration(exp, cal, policy="fresh"):
    from mtpsim.sim.simulator import simulate

    seen = []
    res = simulate(exp, policy, calibration=cal, adjust=lambda sim: seen.append(sim.plannable()))
    return res.metrics["duration"], seen[0]


@pytest.mark.parametrize("rate", ["inf", "4.0"])  # outputs-first (planned) path, stepped path
def test_a_simulated_batch_of_unequal_contexts_costs_more_padded(tmp_path, fitted, rate):
    own = fitted["own"]
    pad = dataclasses.replace(own, cost=dataclasses.replace(own.cost, indexer_keys="padded"))
    exp_path = tmp_path / "exp.toml"
    exp_path.write_text(EXPERIMENT.replace('file = "cal.json"', ""))
    exp = load_experiment(exp_path, [f"workload.request_rate={rate}"])
    (d_own, planned), (d_pad, _) = _duration(exp, own), _duration(exp, pad)
    assert planned == (rate == "inf")
    assert d_pad > d_own  # requests join a running one: their contexts differ


def test_a_simulated_batch_of_equal_contexts_costs_the_same_padded(tmp_path, fitted):
    own = fitted["own"]
    pad = dataclasses.replace(own, cost=dataclasses.replace(own.cost, indexer_keys="padded"))
    exp_path = tmp_path / "exp.toml"
    exp_path.write_text(EXPERIMENT.replace('file = "cal.json"', ""))
    # 2 prompts of one length sent together, expected acceptance, no spread between requests
    eq = load_experiment(exp_path, ["workload.num_prompts=2", 'acceptance.mode="expected"'])
    same = [dataclasses.replace(c, acceptance=dataclasses.replace(c.acceptance, sigma=0.0))
            for c in (own, pad)]
    assert _duration(eq, same[1])[0] == _duration(eq, same[0])[0]


def test_padding_a_shape_of_equal_contexts_changes_nothing(fitted):
    cost = dataclasses.replace(fitted["own"].cost, indexer_keys="padded")
    cal = dataclasses.replace(fitted["own"], cost=cost)
    ctx = np.array([[500.0, 500.0], [500.0, 900.0]])  # step 0 equal, step 1 not
    n, s = ctx.shape[1], ctx.sum(axis=1)
    pad = n * ctx.max(axis=1) - s
    q = StepShape(num_decode=np.full(2, n), decode_ctx=s, decode_keys=np.full(2, 64.0 * n),
                  num_draft=np.full(2, n), draft_ctx=s, draft_keys=np.full(2, 64.0 * n),
                  decode_pad=pad, draft_pad=pad)
    a = sum(FittedCost(cal, "fresh", 3, 64).priced(q).values())
    b = sum(FittedCost(fitted["own"], "fresh", 3, 64).priced(q).values())
    assert a[0] == b[0] and a[1] > b[1]


def test_the_flag_fits_padded_and_a_bad_value_is_one_line(tmp_path, traces):
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    t = ["--trace", str(traces[0]), "--trace", str(traces[1])]
    res = run(["simulate", str(exp), *t, "--indexer-keys", "padded", "--save-calibration",
               str(tmp_path / "cal.json"), "--json"])
    assert res.exit_code == 0, res.output
    assert read_calibration(tmp_path / "cal.json").cost.indexer_keys == "padded"
    _one_line(run(["simulate", str(exp), *t, "--indexer-keys", "longest"]), "--indexer-keys", "padded")
    _one_line(run(["simulate", str(exp), "--indexer-keys", "padded"]), "--indexer-keys", "--trace")
    help_text = run(["simulate", "--help"]).output
    assert "--indexer-keys" in help_text and "padded" in help_text


@pytest.mark.parametrize("value", ["longest", 1, None])
def test_a_bad_value_in_the_file_is_one_line_naming_file_and_field(tmp_path, fitted, value):
    obj = fitted["own"].to_json()
    obj["cost"]["indexer_keys"] = value
    (tmp_path / "cal.json").write_text(json.dumps(obj))
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    _one_line(run(["simulate", str(exp)]), "cal.json", "cost.indexer_keys")


def test_the_python_fit_refuses_a_bad_value(traces):
    from mtpsim.calibration.schema import CalibrationError
    from mtpsim.runs.simulate import fit

    with pytest.raises(CalibrationError, match="indexer_keys"):
        fit(traces, normalise=None, indexer_keys="longest")
