"""The step-cost fit option `draft_calls` (mtpsim.models.cost.DRAFT_CALLS, default "shared"):
"prompt" gives each new prompt's draft calls (the reference engine drafts a freshly prefilled
prompt in calls of its own, apart from the batch's one batched call) a non-negative price of their
own, feature `prompt_calls`, on top of the per-call price. The fit estimates it from the traces;
the file records it by listing the feature, and the pricing, the refits and the shift follow it.
Post hoc on v14-v16 (seen data): docs/uncertainty.md §22."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from _synthetic_traces import K_DRAFT, make_trace

from mtpsim.calibration import read_calibration
from mtpsim.calibration.fit import draft_calls_of, fit_cost, fit_traces, measure_shift, step_quantities
from mtpsim.calibration.schema import CalibrationError
from mtpsim.models.cost import PROMPT_CALL_PHASES
from mtpsim.models.fitted import FittedCost
from mtpsim.result import PHASES

# what a new prompt's own draft calls cost beyond the batch call's price (seconds per call)
EXTRA = {"draft_prefill": 3e-3, "draft_decode_rest": 1e-3}


def _with_prompt_calls(tr):
    """`tr` with each new prompt's draft calls costing EXTRA more (the draft-decode phases run
    k - 1 calls a prompt)."""
    t = dataclasses.replace(tr, steps=[dataclasses.replace(st, phases=dict(st.phases)) for st in tr.steps])
    q, _ = step_quantities(t)
    for j, st in enumerate(t.steps):
        for p, c in EXTRA.items():
            st.phases[p] += c * (1 if p == "draft_prefill" else K_DRAFT - 1) * float(q.prefill_done[j])
    return t


@pytest.fixture(scope="module")
def traces():
    return [_with_prompt_calls(make_trace(p, s, n_requests=40)) for p, s in (("fresh", 1), ("share", 2))]


def _decode_ratio(cal, trs):
    """Measured over priced phase seconds of the steps without a new prompt."""
    meas = priced = 0.0
    for tr in trs:
        q, _ = step_quantities(tr)
        pr = FittedCost(cal, tr.policy, tr.num_speculative_tokens, tr.index_topk).priced(q)
        dec = np.asarray(q.prefill_done) == 0
        tot = sum(np.broadcast_to(pr[p], dec.shape) for p in PHASES) - cal.cost.gap_s
        meas += sum(sum(st.phases.values()) for st, d in zip(tr.steps, dec, strict=True) if d)
        priced += float(tot[dec].sum())
    return meas / priced


def test_the_default_fit_is_the_shared_one_and_lists_no_prompt_calls(traces):
    a, b = fit_cost(traces), fit_cost(traces, draft_calls="shared")
    assert a.phases == b.phases and draft_calls_of(a) == "shared"
    assert all("prompt_calls" not in f.features for f in a.phases.values())


def test_the_prompt_fit_recovers_the_prompt_calls_price_and_prices_decode_steps_right(traces):
    shared, prompt = fit_cost(traces), fit_cost(traces, draft_calls="prompt")
    assert draft_calls_of(prompt) == "prompt"
    for p in PROMPT_CALL_PHASES:
        assert "prompt_calls" in prompt.phases[p].features
    coef = {p: dict(zip(prompt.phases[p].features, prompt.phases[p].coef, strict=True)) for p in EXTRA}
    for p, c in EXTRA.items():
        assert coef[p]["prompt_calls"] == pytest.approx(c, rel=1e-3)
    base = fit_traces(traces)
    with_shared = dataclasses.replace(base, cost=shared)
    with_prompt = dataclasses.replace(base, cost=prompt)
    shared_ratio, prompt_ratio = _decode_ratio(with_shared, traces), _decode_ratio(with_prompt, traces)
    assert shared_ratio < 0.995  # the shared per-call price over-prices them (0.992 here)
    assert prompt_ratio == pytest.approx(1.0, abs=1e-4)


def test_without_a_prompt_surcharge_in_the_data_the_fit_gives_it_no_price():
    trs = [make_trace(p, s, n_requests=40) for p, s in (("fresh", 1), ("share", 2))]
    prompt = fit_cost(trs, draft_calls="prompt")
    for p in PROMPT_CALL_PHASES:
        c = dict(zip(prompt.phases[p].features, prompt.phases[p].coef, strict=True))["prompt_calls"]
        assert c < 1e-6


def test_the_file_records_it_and_the_refits_and_the_shift_follow_it(tmp_path, traces):
    from mtpsim.uncertainty.bootstrap import with_bootstrap
    from mtpsim.uncertainty.draws import replicate_calibration

    cal = fit_traces(traces, draft_calls="prompt")
    cal.write(tmp_path / "cal.json")
    back = read_calibration(tmp_path / "cal.json")
    assert draft_calls_of(back.cost) == "prompt"
    assert back.to_json() == json.loads(json.dumps(cal.to_json()))
    boot = with_bootstrap(cal, traces, 2)
    assert all("prompt_calls" in r["cost"]["phases"]["draft_prefill"]["features"] for r in boot.bootstrap)
    assert draft_calls_of(replicate_calibration(boot, 1).cost) == "prompt"
    shared = fit_traces(traces)
    half = len(traces[0].steps) // 2  # two "kinds": each trace's halves (a kind is the experiment)
    kinds = []
    for tr in traces:
        for i, part in enumerate((tr.steps[:half], tr.steps[half:])):
            meta = dataclasses.replace(tr.meta, experiment=f"kind{i}.toml")
            kinds.append(dataclasses.replace(tr, steps=part, meta=meta))
    assert measure_shift(cal, kinds).decode_sd != measure_shift(shared, kinds).decode_sd


def test_an_unknown_value_is_refused_naming_the_option(traces):
    with pytest.raises(CalibrationError, match="draft_calls"):
        fit_cost(traces, draft_calls="batched")
    with pytest.raises(CalibrationError, match="draft_calls"):
        fit_traces(traces, draft_calls="nope")
