"""Coverage where the truth is known: traces drawn from known parameters are fitted with
bootstrap refits; the 90 % intervals of `--uncertainty` for new configurations inside the range
(unpaired, as a single real A/B run is) must cover at least 80 % of the figures the true
parameters produce on a run with another seed (the traces are of two workload kinds, whose measured
workload-shift error is ~0 here: the synthetic cost is exact). The same scoring the reference-engine coverage
benchmark uses (benchmarks/uncertainty_coverage.py)."""

import dataclasses

import pytest
from _synthetic_traces import COST, CTX_REF, KAPPA, OVERLAP_U, SIGMA, B, make_trace

from mtpsim.calibration.fit import fit_traces
from mtpsim.calibration.schema import AcceptanceFit, CostFit, OverlapFit, PhaseFit
from mtpsim.result import PHASES
from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment
from mtpsim.uncertainty.bootstrap import with_bootstrap
from mtpsim.uncertainty.coverage import report, score_run
from mtpsim.uncertainty.domain import machine_info
from mtpsim.uncertainty.run import propagate

EXP = """
seed = {seed}
policies = ["fresh", "share"]
[engine]
scheduler = "reference"
max_num_seqs = 8
[speculative]
num_speculative_tokens = 3
index_topk = 64
[workload]
num_prompts = 24
input_len = {ctx}
output_len = 80
max_concurrency = {conc}
[reference]
device = "cpu"
threads = 1
[calibration]
file = "cal.json"
[uncertainty]
paired = false
"""


def _one_kappa_lk(k: int) -> dict:
    """The default kappa_lk form holding the one-kappa truth (gamma 0, every step KAPPA)."""
    return {"kappa_steps": [KAPPA] * (k - 1), "exponent": 0.0, "ratio_ref": 16.0}


def _truth(fit):
    phases = {p: PhaseFit(list(COST.get(p, {})), list(COST.get(p, {}).values()), 1.0, 0.0, 1)
              for p in PHASES}
    return dataclasses.replace(fit, acceptance=AcceptanceFit(CTX_REF, B.tolist(), KAPPA, SIGMA,
                                                        kappa_steps=[KAPPA] * (len(B) - 1),
                                                        kappa_lk=_one_kappa_lk(len(B))),
                               overlap=OverlapFit({"share": OVERLAP_U.tolist()}),
                               cost=CostFit(phases, 1e-4), bootstrap=[])


@pytest.mark.slow
def test_bootstrap_intervals_cover_the_true_parameters_outcomes(tmp_path):
    # two workload kinds (experiment files), so the fit measures its workload-shift error
    # (mtpsim.calibration.shift) instead of carrying the prior: the synthetic step cost is exactly
    # linear in the features, so the measured shift is ~0 and does not widen the intervals
    traces = []
    for i, (name, conc) in enumerate((("stream", 6), ("burst", 3))):
        for j, policy in enumerate(("fresh", "share")):
            tr = make_trace(policy, 1 + j + 2 * i, n_requests=30, conc=conc)
            tr.meta = dataclasses.replace(tr.meta, experiment=f"cal-{name}.toml")
            traces.append(tr)
    fit = fit_traces(traces)
    assert fit.workload_shift.source == "leave-one-kind-out" and fit.workload_shift.decode_sd < 0.01
    here = {k: v for k, v in machine_info("cpu", 1).items() if k in ("cpu", "threads")}
    dataclasses.replace(with_bootstrap(fit, traces, 10, seed=0), machine=here).write(
        tmp_path / "cal.json")
    truth = _truth(fit)
    rows = []
    for i, (ctx, conc) in enumerate([(400, 2), (800, 4), (1200, 6)]):
        path = tmp_path / f"e{i}.toml"
        path.write_text(EXP.format(seed=100 + i, ctx=ctx, conc=conc))
        exp = load_experiment(path)
        real = {p: simulate(dataclasses.replace(exp, seed=999 + i), p, calibration=truth).metrics
                for p in exp.policies}
        run = propagate(str(path), [], 10)
        assert not run.extrapolation.flagged
        rows += score_run(f"c{i}", run.summary(), real, run.policies, True, run.prob)
    rep = report(rows)
    assert rep["values"] == 27 and rep["fraction_covered"] >= 0.8, [
        (r.config, r.what, r.metric) for r in rows if not r.covered]
    # narrow enough to be useful: throughput within +-12 % (the inside-the-range criterion)
    assert rep["inside"]["output_throughput"]["median_half_width_pct"] <= 12
