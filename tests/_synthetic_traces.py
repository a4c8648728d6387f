"""Traces drawn from known parameters, scheduled as the reference engine schedules (verify the
running requests, then admit and prefill waiting ones into free slots)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mtpsim.models.cost import KEY_FEATURES, StepShape, cost_features
from mtpsim.result import PHASES
from mtpsim.trace import Trace
from mtpsim.trace_records import TraceRequest, TraceStep

K_DRAFT = 3
TOPK = 64
CTX_REF = 600.0
B = np.array([[1.2, -0.4], [0.5, -0.2], [0.0, 0.3]])  # [k][b0, b1]
SIGMA = 0.6
KAPPA = 2.0
LK_REF_TRUE = 10.0  # L / K at which kappa_lk's synthetic kappas are the given ones
OVERLAP_U = np.array([[-1.0, 0.5], [-1.5, 0.3]])  # share, draft steps 1, 2
COST = {  # seconds per feature unit (names of mtpsim.models.cost.cost_features)
    "prefill": {"tokens": 1.5e-4, "token_keys": 6e-6, "pairs": 1e-7},
    "verify": {"steps": 0.005, "rows": 2e-4, "row_keys": 9e-6, "ctx": 2e-7},
    "draft_prefill": {"calls": 0.002, "rows": 5e-5, "row_keys": 2e-6, "requests": 3e-4},
    "draft_decode_indexer": {"calls": 4e-4, "ctx": 5e-8},
    "draft_decode_rest": {"calls": 0.0015, "rows": 1e-4, "row_keys": 4e-6},
    "rejection_sample": {"steps": 1e-4, "requests": 1e-4},
    "overhead": {"steps": 5e-4, "requests": 2e-4},
}
ATTENTION_PER_CALL = 2e-4  # of the per-call price of each attending phase (its `steps`/`calls`)
# A small reference-scheduler experiment of the traces' k and top-k, to fit them to.
REFERENCE_SPEC = f"""
seed = 1
policies = ["fresh", "share"]
[engine]
scheduler = "reference"
[speculative]
num_speculative_tokens = {K_DRAFT}
index_topk = {TOPK}
[workload]
num_prompts = 6
input_len = 500
output_len = 40
max_concurrency = 3
"""


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def true_overlap(ctx: float, step: int) -> float:
    u0, u1 = OVERLAP_U[step - 1]
    c = sigmoid(u0 + u1 * math.log(ctx / TOPK))
    r = min(1.0, TOPK / ctx)
    n_f = min(ctx + step, TOPK)
    return (n_f - step) * (r + (1 - r) * c) / n_f


def make_trace(policy: str, seed: int, n_requests: int = 80, conc: int = 6,
               cost_noise: float = 0.0, attention: bool = True,
               kappa_steps: tuple[float, ...] | None = None, overlap_noise: float = 0.0,
               lk_exponent: float = 0.0) -> Trace:
    """`attention`: record each phase's sparse-attention seconds (its per-key cost term).
    `kappa_steps`: draw share's acceptance with a kappa per draft step (penalty kappa_step)
    instead of KAPPA; `overlap_noise`: the recorded overlap scatters around the curve by this
    (normal SD), while acceptance follows the curve's overlap. `lk_exponent`: each kappa scaled
    by ((L / K) / LK_REF_TRUE) ** this (penalty kappa_lk)."""
    rng = np.random.default_rng(seed)
    prompts = rng.integers(150, 1500, n_requests)
    outputs = rng.integers(40, 120, n_requests)
    shift = rng.normal(0, SIGMA, n_requests)
    tr = Trace("reference", policy, K_DRAFT, TOPK)
    waiting = list(range(n_requests))
    running: dict[int, int] = {}  # id -> generated
    t, step = 0.0, 0
    while waiting or running:
        reqs = []
        for rid in list(running):
            ctx = int(prompts[rid] + running[rid])
            ovl = [true_overlap(ctx, s) for s in range(1, K_DRAFT)] if policy == "share" else []
            acc, ok = [], True
            for i in range(K_DRAFT):
                b0, b1 = B[i]
                p = sigmoid(b0 + b1 * math.log(ctx / CTX_REF) + shift[rid])
                if i > 0 and policy == "share":
                    kap = KAPPA if kappa_steps is None else kappa_steps[i - 1]
                    kap *= (ctx / TOPK / LK_REF_TRUE) ** lk_exponent
                    p *= 1 - (1 - ovl[i - 1]) ** kap
                ok = ok and rng.random() < p
                acc.append(int(ok))
            if overlap_noise:
                ovl = [float(np.clip(o + overlap_noise * rng.standard_normal(), 0, 1)) for o in ovl]
            reqs.append(TraceRequest(str(rid), ctx, K_DRAFT, acc, [round(o, 5) for o in ovl]))
            running[rid] += sum(acc) + 1
            if running[rid] >= outputs[rid]:
                del running[rid]
        new = []
        while waiting and len(running) < conc:
            rid = waiting.pop(0)
            running[rid] = 1
            new.append(rid)
        tr.steps.append(TraceStep(step, round(t, 6), len(reqs), len(new), dict.fromkeys(PHASES, 0.0),
                                  0.0, [0] * K_DRAFT, reqs))
        step += 1
        t += 0.05
    # phase timings from the known cost coefficients, on the quantities the fit reconstructs
    from mtpsim.calibration.fit import step_quantities

    q, _ = step_quantities(tr)
    feats = cost_features(q, K_DRAFT, TOPK)
    t = 0.0
    for j, st in enumerate(tr.steps):
        for p in PHASES:
            if p == "draft_decode_indexer" and policy != "fresh":
                continue
            v = sum(c * feats[p][n][j] for n, c in COST[p].items())
            st.phases[p] = float(v * (1 + cost_noise * rng.standard_normal()))
            key, _, call = KEY_FEATURES.get(p, ("", "", None))
            per_call = ATTENTION_PER_CALL * feats[p][call][j] if call else 0.0
            if attention and key in COST[p] and feats[p][key][j] + per_call > 0:
                st.attention[p] = float(COST[p][key] * feats[p][key][j] + per_call)
        st.time_s = round(t, 6)
        t += sum(st.phases.values()) + 1e-4  # a 100 µs host gap between steps
    return tr


def quantities_of(tr: Trace) -> StepShape:
    from mtpsim.calibration.fit import step_quantities

    return step_quantities(tr)[0]


def write_policy_traces(folder: Path, n_requests: int) -> list[Path]:
    """A `fresh` (seed 1) and a `share` (seed 2) synthetic trace written into `folder`: what a
    trace-calibrated `simulate` or fit test reads."""
    paths = []
    for policy, seed in (("fresh", 1), ("share", 2)):
        p = folder / f"{policy}.trace.jsonl"
        make_trace(policy, seed, n_requests=n_requests).write(p)
        paths.append(p)
    return paths
