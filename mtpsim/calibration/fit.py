"""Fit a Calibration to real-mode traces (mtpsim.trace).

- Acceptance: every verified draft position i whose predecessors were accepted is one Bernoulli
  event (vLLM's conditional rate). Maximum likelihood of
  `sigmoid(b0_i + b1_i ln(L/L_ref) + u_r) * (1 - (1 - o_i) ** kappa)` with a per-request random
  shift u_r ~ N(0, sigma) (Gauss-Hermite quadrature), with the overlap o_i the trace recorded
  (1 under fresh and at step 0): b and sigma from the fresh events, then kappa from the share
  and share_recent events with them held (pooled when there is no fresh trace). Other policies
  (target_share, whose step 0 is changed too) get their own [b0, b1] per position.
  The `kappa_step` form (mtpsim.models.penalty) is fitted too, the same way, with one kappa per
  draft step and the overlap taken from the fitted overlap curve at the event's context and
  top-k (what the simulator feeds in) rather than the event's own: an event's own overlap also
  marks how hard that draft was (low-overlap drafts are rejected more under any policy), which
  made the per-event fit attribute too much to the overlap and miss the per-position penalty.
- Overlap: least squares of the recorded overlap per reuse policy and draft step on
  `c = sigmoid(u0 + u1 ln(L/K))` through mtpsim.models.overlap's formula.
- Step cost: non-negative least squares of each phase's measured seconds on the features of
  mtpsim.models.cost.cost_features (the MTP indexer phase on `fresh` steps only; cost
  fitted on fresh/share/share_recent steps), plus the median host gap between steps. Where the
  traces record the sparse-attention seconds within each phase, the per-key feature is fitted to
  those and the other features to the rest of the phase, so top-k is priced apart from per-row
  work even when every trace ran at one top-k.
Every fit reports R^2 and residuals.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from collections.abc import Callable, Sequence
from dataclasses import field

import numpy as np
from scipy.optimize import least_squares, minimize, nnls

from mtpsim.calibration.schema import (
    AcceptanceFit,
    Calibration,
    CalibrationError,
    CostFit,
    OverlapFit,
    PhaseFit,
)
from mtpsim.calibration.shift import MEASURED, PRIOR, PRIOR_SOURCE, WorkloadShift, is_prefill, trace_kind
from mtpsim.dataclass import dataclass
from mtpsim.errors import TraceError
from mtpsim.fileio import portable
from mtpsim.models.cost import (
    DRAFT_CALLS,
    INDEXER_KEYS,
    KEY_FEATURES,
    PROMPT_CALL_PHASES,
    StepShape,
    cost_features,
    padded,
)
from mtpsim.models.fitted import FittedCost
from mtpsim.models.overlap import agreement_curve, fitted_agreement, overlap_from_agreement
from mtpsim.models.penalty import Kappa, KappaLk, KappaStep, keep_factor
from mtpsim.policies import BASELINE, policies_where, traits
from mtpsim.result import PHASES
from mtpsim.trace import Trace

# policies whose draft step 0 is fresh's: one set of acceptance curves and one cost fit
POOLED = policies_where(lambda t: t.step0_as_fresh)
GH_NODES = 10
CONTEXT_BINS = 6


@dataclass(slots=True)
class Events:
    """Conditional acceptance events, one per (verification, draft position reached)."""

    policy: list[str] = field(default_factory=list)
    pos: list[int] = field(default_factory=list)
    ctx: list[float] = field(default_factory=list)
    ovl: list[float] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    req: list[int] = field(default_factory=list)
    topk: list[int] = field(default_factory=list)

    def arrays(self, mask_policies: Sequence[str]) -> dict[str, np.ndarray]:
        keep = np.isin(np.asarray(self.policy), list(mask_policies))
        return {"pos": np.asarray(self.pos)[keep], "ctx": np.asarray(self.ctx, float)[keep],
                "ovl": np.asarray(self.ovl, float)[keep], "y": np.asarray(self.y, float)[keep],
                "req": np.asarray(self.req)[keep], "topk": np.asarray(self.topk, float)[keep],
                "policy": np.asarray(self.policy)[keep]}


def acceptance_events(traces: Sequence[Trace]) -> Events:
    ev = Events()
    req_ids: dict[tuple[int, str], int] = {}
    for t_i, tr in enumerate(traces):
        for st in tr.steps:
            for r in st.requests:
                rid = req_ids.setdefault((t_i, r.id), len(req_ids))
                for i in range(min(r.drafted, len(r.accepted))):
                    if i > 0 and not r.accepted[i - 1]:
                        break
                    o = 1.0
                    if not traits(tr.policy).runs_indexer(i) and i > 0 and i - 1 < len(r.overlap):
                        o = float(r.overlap[i - 1])
                    ev.policy.append(tr.policy)
                    ev.pos.append(i)
                    ev.ctx.append(float(r.context_len))
                    ev.ovl.append(o)
                    ev.y.append(int(r.accepted[i]))
                    ev.req.append(rid)
                    ev.topk.append(tr.index_topk)
    return ev


def curve_overlap(d: dict[str, np.ndarray], ov: OverlapFit) -> np.ndarray:
    """Each event's overlap from the fitted overlap curve at its context, step and top-k (1 at
    step 0, where the policy runs the indexer, and for a policy without a fitted curve)."""
    out = np.ones(d["pos"].size)
    for p in np.unique(d["policy"]):
        if p not in ov.policies:
            continue
        for s in np.unique(d["pos"]):
            m = (d["policy"] == p) & (d["pos"] == s)
            if s == 0 or traits(str(p)).runs_indexer(int(s)) or not m.any():
                continue
            c = fitted_agreement(ov, str(p), d["ctx"][m], int(s), d["topk"][m])
            out[m] = overlap_from_agreement(str(p), d["ctx"][m], int(s), d["topk"][m], c)
    return out


def _neg_loglik(theta: np.ndarray, d: dict[str, np.ndarray], k: int, x: np.ndarray,
                with_kappa: bool, nodes: np.ndarray, weights: np.ndarray, n_req: int,
                keep: np.ndarray | None = None) -> float:
    """Minus the marginal log-likelihood; the keep factor is kappa's (theta's last entry) or,
    given, `keep` per event."""
    b0, b1 = theta[:k], theta[k:2 * k]
    sigma = math.exp(theta[2 * k])
    g = keep
    if with_kappa and g is None:
        g = keep_factor(np.clip(d["ovl"], 0.0, 1.0), math.exp(theta[2 * k + 1]))
    eta = (b0[d["pos"]] + b1[d["pos"]] * x)[:, None] + math.sqrt(2.0) * sigma * nodes[None, :]
    # p = clip(g / (1 + exp(-eta)), 1e-9, 1 - 1e-9) and ll = y log p + (1 - y) log(1 - p), [E, J],
    # computed in place: the same operations on the same values, without a new array for each
    p = np.exp(np.negative(eta, out=eta), out=eta)
    p += 1.0
    np.divide(g[:, None] if g is not None else 1.0, p, out=p)
    np.clip(p, 1e-9, 1 - 1e-9, out=p)
    y = d["y"][:, None]
    ll = np.log(p)
    ll *= y
    miss = np.log1p(np.negative(p, out=p), out=p)
    miss *= 1 - y
    ll += miss
    # per_req[r, j] = the sum of ll[e, j] over request r's events, added in event order: what
    # np.add.at(per_req, req, ll) gives bit for bit, at about a third of its cost
    j = nodes.size
    cells = (d["req"][:, None] * j + np.arange(j)).ravel()
    per_req = np.bincount(cells, weights=ll.ravel(), minlength=n_req * j).reshape(n_req, j)
    m = per_req.max(axis=1, keepdims=True)
    marg = m[:, 0] + np.log(np.exp(per_req - m) @ weights / math.sqrt(math.pi))
    return -float(marg.sum())


def _fit_logistic(d: dict[str, np.ndarray], k: int, ctx_ref: float, with_kappa: bool,
                  sigma: float | None = None) -> tuple[np.ndarray, float, float | None]:
    """ML fit -> ([k, 2] rows, sigma, kappa). `sigma` given: held fixed."""
    x = np.log(d["ctx"] / ctx_ref)
    nodes, weights = np.polynomial.hermite.hermgauss(GH_NODES)
    _, req = np.unique(d["req"], return_inverse=True)
    d = {**d, "req": req}
    n_req = int(req.max()) + 1 if req.size else 0
    rates = [np.clip(d["y"][d["pos"] == i].mean() if np.any(d["pos"] == i) else 0.5, 0.02, 0.98)
             for i in range(k)]
    theta0 = np.concatenate([np.log(np.divide(rates, np.subtract(1, rates))), np.zeros(k),
                             [math.log(0.5 if sigma is None else max(sigma, 1e-4))],
                             [math.log(30.0)] if with_kappa else []])
    fixed = sigma is not None

    def f(th: np.ndarray) -> float:
        if fixed:
            th = th.copy()
            th[2 * k] = math.log(max(sigma, 1e-4))  # type: ignore[arg-type]
        return _neg_loglik(th, d, k, x, with_kappa, nodes, weights, n_req)

    if with_kappa:  # (1 - o) ** kappa is flat in kappa once tiny: start from the best of a grid
        grid = [0.5, 1, 2, 4, 8, 16, 64, 256, 1024]
        theta0[-1] = math.log(min(grid, key=lambda kp: f(np.concatenate([theta0[:-1], [math.log(kp)]]))))
    bounds = ([(-10, 10)] * k + [(-5, 5)] * k + [(math.log(1e-4), math.log(5.0))]
              + ([(math.log(0.5), math.log(1e4))] if with_kappa else []))
    sol = minimize(f, theta0, method="L-BFGS-B", bounds=bounds, options={"maxiter": 300})
    th = sol.x
    rows = np.stack([th[:k], th[k:2 * k]], axis=1)
    out_sigma = float(sigma) if fixed else math.exp(th[2 * k])  # type: ignore[arg-type]
    if out_sigma < 2e-4:
        out_sigma = 0.0
    return rows, out_sigma, (math.exp(th[2 * k + 1]) if with_kappa else None)


def _held_curves(d: dict[str, np.ndarray], rows: np.ndarray, sigma: float, ctx_ref: float) -> tuple:
    """What a penalty fit with the curves and spread held fixed needs: k, ln(L / L_ref) per event,
    the quadrature over the request spread, events' requests renumbered 0..n-1, and the fixed head
    of the parameter vector (curves, log sigma)."""
    k = rows.shape[0]
    x = np.log(d["ctx"] / ctx_ref)
    nodes, weights = np.polynomial.hermite.hermgauss(GH_NODES)
    _, req = np.unique(d["req"], return_inverse=True)
    d = {**d, "req": req}
    n_req = int(req.max()) + 1 if req.size else 0
    head = np.concatenate([rows[:, 0], rows[:, 1], [math.log(max(sigma, 1e-4))]])
    return k, x, nodes, weights, d, n_req, head


@dataclass(frozen=True, slots=True)
class HeldEvents:
    """What a penalty fit sees (mtpsim.models.penalty, each form's `fit`): per event its draft
    position, overlap and L / K, and `nll`, minus the log-likelihood of all events given each
    event's keep factor (curves and spread held)."""

    k: int  # draft positions
    pos: np.ndarray  # [E]
    overlap: np.ndarray  # [E] clipped to [0, 1]
    ratio: np.ndarray  # [E] context / top-k
    nll: Callable[[np.ndarray], float]

    def steps(self) -> list[int]:
        """Draft steps >= 1 with at least one event that lost overlap (the others pin nothing)."""
        return [s for s in range(1, self.k) if np.any((self.pos == s) & (self.overlap < 1.0))]


def _held(d: dict[str, np.ndarray], rows: np.ndarray, sigma: float, ctx_ref: float) -> HeldEvents:
    """Events of reuse policies for a penalty form's fit, curves and spread held fixed."""
    k, x, nodes, weights, d, n_req, head = _held_curves(d, rows, sigma, ctx_ref)

    def nll(keep: np.ndarray) -> float:
        return _neg_loglik(head, d, k, x, False, nodes, weights, n_req, keep=keep)

    return HeldEvents(k, d["pos"], np.clip(d["ovl"], 0.0, 1.0), d["ctx"] / d["topk"], nll)


def _acceptance_report(ev: Events, cal_predict, k: int) -> dict:
    """Observed vs predicted conditional rate per policy, position and context bin; R^2 over
    the bins (weighted by events) and the mean absolute residual in points."""
    out: dict[str, object] = {}
    pol = np.asarray(ev.policy)
    for p in sorted(set(ev.policy)):
        d = ev.arrays([p])
        pred = cal_predict(p, d)
        if pred is None:
            continue
        edges = np.quantile(d["ctx"], np.linspace(0, 1, CONTEXT_BINS + 1))
        cells, obs, fit, w = [], [], [], []
        for i in range(k):
            for b in range(CONTEXT_BINS):
                m = (d["pos"] == i) & (d["ctx"] >= edges[b]) & (
                    (d["ctx"] <= edges[b + 1]) if b == CONTEXT_BINS - 1 else (d["ctx"] < edges[b + 1]))
                if m.sum() < 5:
                    continue
                cells.append({"pos": i, "context": [float(edges[b]), float(edges[b + 1])],
                              "n": int(m.sum()), "observed": float(d["y"][m].mean()),
                              "predicted": float(pred[m].mean())})
                obs.append(d["y"][m].mean())
                fit.append(pred[m].mean())
                w.append(m.sum())
        obs_a, fit_a, w_a = np.asarray(obs), np.asarray(fit), np.asarray(w, float)
        mean = np.average(obs_a, weights=w_a) if w_a.size else math.nan
        ss_tot = float(np.sum(w_a * (obs_a - mean) ** 2))
        ss_res = float(np.sum(w_a * (obs_a - fit_a) ** 2))
        out[p] = {"events": int((pol == p).sum()),
                  "r2": 1 - ss_res / ss_tot if ss_tot > 0 else math.nan,
                  "mean_abs_residual_pts": float(np.average(np.abs(obs_a - fit_a), weights=w_a) * 100)
                  if w_a.size else math.nan,
                  "per_position": [{"pos": i, "observed": float(d["y"][d["pos"] == i].mean()),
                                    "predicted": float(pred[d["pos"] == i].mean()),
                                    "n": int((d["pos"] == i).sum())}
                                   for i in range(k) if np.any(d["pos"] == i)],
                  "bins": cells}
    return out


def _base_events(ev: Events, pooled: Sequence[str]) -> dict[str, np.ndarray]:
    """Events the base curves describe as they are: every fresh event, and position 0 of the
    pooled reuse policies (their draft step 0 is fresh's computation)."""
    d = ev.arrays(pooled)
    keep = (d["policy"] == BASELINE) | (d["pos"] == 0)
    return {n: v[keep] for n, v in d.items()}


def fit_acceptance(traces: Sequence[Trace], overlap: OverlapFit | None = None) -> AcceptanceFit:
    """The acceptance fit; `overlap` (else fitted here) gives the kappa_step form its overlaps."""
    ev = acceptance_events(traces)
    if not ev.y:
        raise CalibrationError(None, "--trace", "expected verified drafts in the traces (none found)")
    k = max(tr.num_speculative_tokens for tr in traces)
    ctx_ref = float(np.exp(np.mean(np.log(ev.ctx))))
    pooled = [p for p in POOLED if p in set(ev.policy)]
    with_kappa = any(traits(p).reuses_own_row for p in pooled)
    base_rows, sigma, kappa = None, 0.0, None
    if pooled:
        d = ev.arrays(pooled)
        with_kappa = with_kappa and bool(np.any(d["ovl"] < 1.0))
        if with_kappa and BASELINE in pooled:
            # two stages: the curves and spread from fresh alone, then kappa from the reuse
            # policies with those held fixed, so a misfit of the overlap link cannot bend the
            # fresh curves (pooled, it did: fresh position 1 fitted 3 points above its rate)
            base_rows, sigma, _ = _fit_logistic(_base_events(ev, pooled), k, ctx_ref, False)
            kappa = Kappa.fit(_held(ev.arrays([p for p in pooled if p != BASELINE]), base_rows,
                                    sigma, ctx_ref)).value
        else:
            base_rows, sigma, kappa = _fit_logistic(d, k, ctx_ref, with_kappa)
    own: dict[str, list[list[float]]] = {}
    for p in sorted(set(ev.policy) - set(POOLED)):
        rows, s, _ = _fit_logistic(ev.arrays([p]), k, ctx_ref, False, sigma=sigma if pooled else None)
        own[p] = rows.tolist()
        if not pooled:
            sigma = s
    if base_rows is None:  # no fresh-like policy: the base is the first own fit
        base_rows = np.asarray(next(iter(own.values())))

    kappa_steps, kappa_lk, step_fit, lk_fit = None, None, None, None
    if kappa is not None:
        ov = overlap if overlap is not None else fit_overlap(traces)
        reuse = [p for p in pooled if traits(p).reuses_own_row]
        d = ev.arrays(reuse)
        d["ovl"] = curve_overlap(d, ov)
        held = _held(d, np.asarray(base_rows), sigma, ctx_ref)
        step_fit = KappaStep.fit(held)
        lk_fit = KappaLk.fit(held, step_fit)
        kappa_steps = step_fit.to_json() if step_fit else None
        kappa_lk = lk_fit.to_json() if lk_fit else None
    forms = {KappaStep.name: step_fit, KappaLk.name: lk_fit}

    def predict(policy: str, d: dict[str, np.ndarray], steps: str = "") -> np.ndarray | None:
        # mean over the request spread: E[sigmoid(eta + u)] by quadrature
        rows = np.asarray(own.get(policy, base_rows))
        x = np.log(d["ctx"] / ctx_ref)
        nodes, weights = np.polynomial.hermite.hermgauss(GH_NODES)
        eta = (rows[d["pos"], 0] + rows[d["pos"], 1] * x)[:, None] + math.sqrt(2) * sigma * nodes
        a = (1 / (1 + np.exp(-eta))) @ weights / math.sqrt(math.pi)
        if not traits(policy).reuses_own_row or policy in own:
            return None if steps else a
        if steps:  # a form fitted on the overlap curve
            form = forms[steps]
            if form is None:
                return None
            kap = np.ones(d["pos"].size)
            for pos in np.unique(d["pos"][d["pos"] > 0]):
                m = d["pos"] == pos
                kap[m] = form.kappa(int(pos), d["ctx"][m] / d["topk"][m])
            return a * keep_factor(np.clip(curve_overlap(d, ov), 0, 1), kap)
        if kappa is not None:
            a = a * keep_factor(np.clip(d["ovl"], 0, 1), kappa)
        return a

    report = _acceptance_report(ev, predict, k)
    for form in (KappaStep.name, KappaLk.name):
        for p, rep in _acceptance_report(ev, lambda p, d, f=form: predict(p, d, steps=f), k).items():
            report[p][form] = rep  # type: ignore[index]
    return AcceptanceFit(ctx_ref, np.asarray(base_rows).tolist(), kappa, sigma, own, report,
                         kappa_steps, kappa_lk)


def fit_overlap(traces: Sequence[Trace]) -> OverlapFit:
    data: dict[str, dict[int, list[tuple[float, float, int]]]] = {}
    for tr in traces:
        if traits(tr.policy).indexer == "every":  # selects as fresh: no overlap to fit
            continue
        for st in tr.steps:
            for r in st.requests:
                for s_1, o in enumerate(r.overlap):
                    data.setdefault(tr.policy, {}).setdefault(s_1 + 1, []).append(
                        (float(r.context_len), float(o), tr.index_topk))
    fits: dict[str, list[list[float]]] = {}
    report: dict[str, object] = {}
    for policy, steps in sorted(data.items()):
        rows, rep = [], []
        for s in range(1, max(steps) + 1):
            pts = np.asarray(steps.get(s, []), float)
            if pts.size == 0:
                rows.append(rows[-1] if rows else [0.0, 0.0])
                continue
            L, o, K = pts[:, 0], pts[:, 1], pts[:, 2]

            def resid(u: np.ndarray, L=L, o=o, K=K, s=s, policy=policy) -> np.ndarray:
                c = agreement_curve(u[0], u[1], L, K)
                return overlap_from_agreement(policy, L, s, K, c) - o  # type: ignore[arg-type]

            sol = least_squares(resid, np.array([-1.0, 0.0]), bounds=([-15, -10], [15, 10]))
            res = resid(sol.x)
            ss_tot = float(np.sum((o - o.mean()) ** 2))
            rows.append([float(sol.x[0]), float(sol.x[1])])
            rep.append({"step": s, "n": int(o.size), "mean_observed": float(o.mean()),
                        "mean_predicted": float((res + o).mean()),
                        "r2": 1 - float(np.sum(res ** 2)) / ss_tot if ss_tot > 0 else math.nan,
                        "rmse": float(np.sqrt(np.mean(res ** 2)))})
        fits[policy] = rows
        report[policy] = rep
    return OverlapFit(fits, report)


# The StepShape fields a trace gives back (its prompts' key sums and chunk reads are not
# recorded, and the fitted cost does not use them).
TRACED_QUANTITIES = ("num_decode", "decode_ctx", "decode_keys", "num_draft", "draft_ctx",
                     "draft_keys", "prefill_done", "prefill_tokens", "prefill_pairs", "decode_pad",
                     "draft_pad")


def step_quantities(tr: Trace) -> tuple[StepShape, np.ndarray]:
    """Per-step quantities reconstructed from a trace, and the host gap after each step.

    Prompt lengths come from each request's first verification (context = prompt + 1 token),
    which follows its prefill step; requests whose last verification is in a step finish
    there and do not draft. `decode_pad` / `draft_pad`: what counting the decoding (batch-drafting)
    requests at their batch's longest context adds (mtpsim.models.cost.padded)."""
    first: dict[str, tuple[int, int]] = {}
    last: dict[str, int] = {}
    for j, st in enumerate(tr.steps):
        for r in st.requests:
            first.setdefault(r.id, (j, r.context_len - 1))
            last[r.id] = j
    prompts_after: dict[int, list[int]] = {}
    for j, plen in first.values():
        prompts_after.setdefault(j - 1, []).append(plen)
    known = [p for v in prompts_after.values() for p in v]
    mean_prompt = float(np.mean(known)) if known else 0.0
    K = tr.index_topk
    cols: dict[str, list[float]] = {n: [] for n in TRACED_QUANTITIES}
    for j, st in enumerate(tr.steps):
        ctx = np.asarray([r.context_len for r in st.requests], float)
        finishing = np.asarray([last[r.id] == j for r in st.requests], bool)
        plens = list(prompts_after.get(j, []))[:st.num_prefills]
        plens += [mean_prompt] * (st.num_prefills - len(plens))
        p_arr = np.asarray(plens, float)
        new_ctx = p_arr  # a prefilled prompt drafts at context = prompt length
        cols["num_decode"].append(float(ctx.size))
        cols["decode_ctx"].append(float(ctx.sum()))
        cols["decode_keys"].append(float(np.minimum(ctx, K).sum()))
        cols["num_draft"].append(float((~finishing).sum() + p_arr.size))
        cols["draft_ctx"].append(float(ctx[~finishing].sum() + new_ctx.sum()))
        cols["draft_keys"].append(float(np.minimum(ctx[~finishing], K).sum() + np.minimum(new_ctx, K).sum()))
        keep = ctx[~finishing]  # the requests that draft in the batch's call
        cols["decode_pad"].append(float(ctx.size * ctx.max() - ctx.sum()) if ctx.size else 0.0)
        cols["draft_pad"].append(float(keep.size * keep.max() - keep.sum()) if keep.size else 0.0)
        cols["prefill_done"].append(float(p_arr.size))
        cols["prefill_tokens"].append(float(p_arr.sum()))
        cols["prefill_pairs"].append(float((p_arr * (p_arr + 1) / 2).sum()))
    q = StepShape(**{n: np.asarray(v, float) for n, v in cols.items()})
    t = np.asarray([st.time_s for st in tr.steps], float)
    busy = np.asarray([sum(st.phases.values()) + st.shadow_s for st in tr.steps], float)
    gaps = np.maximum(np.diff(t) - busy[:-1], 0.0) if t.size > 1 else np.zeros(0)
    return q, gaps


_OWN_QUANTITIES = step_quantities  # bound here: benchmarks swap `step_quantities` for candidates


def padded_quantities(tr: Trace) -> tuple[StepShape, np.ndarray]:
    """As step_quantities, with each step's decoding contexts summed as (requests x the longest)
    and the batch-drafting ones likewise (each new prompt drafts in a call of its own): what the
    fit with indexer_keys = "padded" reads the steps as."""
    q, gaps = _OWN_QUANTITIES(tr)
    return padded(q), gaps


def check_indexer_keys(value: object, where: str = "indexer_keys") -> str:
    """`value` if it names a way of counting the indexer's keys, else a CalibrationError."""
    if value not in INDEXER_KEYS:
        raise CalibrationError(None, where, f"expected one of {', '.join(INDEXER_KEYS)}, got {value!r}")
    return str(value)


def check_draft_calls(value: object, where: str = "draft_calls") -> str:
    """`value` if it names a way of pricing the draft phases' calls, else a CalibrationError."""
    if value not in DRAFT_CALLS:
        raise CalibrationError(None, where, f"expected one of {', '.join(DRAFT_CALLS)}, got {value!r}")
    return str(value)


def draft_calls_of(cost: CostFit) -> str:
    """How `cost` priced the draft phases' calls: "prompt" when it lists `prompt_calls`."""
    return "prompt" if any("prompt_calls" in cost.phases[p].features for p in PROMPT_CALL_PHASES
                           if p in cost.phases) else "shared"


def _nnls(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares with columns scaled to 1 (coefficients in original units)."""
    if A.shape[1] == 0:
        return np.zeros(0)
    scale = np.maximum(np.abs(A).max(axis=0), 1e-12)
    coef, _ = nnls(A / scale, y, maxiter=50 * A.shape[1])
    return coef / scale


def _r2(pred: np.ndarray, y: np.ndarray) -> float:
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1 - float(np.sum((pred - y) ** 2)) / ss_tot if ss_tot > 0 else math.nan


def fit_cost(traces: Sequence[Trace], indexer_keys: str = "own", draft_calls: str = "shared") -> CostFit:
    """The step cost fit; `indexer_keys` (mtpsim.models.cost.INDEXER_KEYS): "padded" counts the
    decoding and drafting contexts at their batch's longest (the file records it, and the pricing
    follows it); `draft_calls` (mtpsim.models.cost.DRAFT_CALLS): "prompt" fits each new prompt's
    draft calls a price of their own on top of the batch's call (feature `prompt_calls`)."""
    pad = check_indexer_keys(indexer_keys) == "padded"
    own_calls = check_draft_calls(draft_calls) == "prompt"
    X: dict[str, list[np.ndarray]] = {p: [] for p in PHASES}
    Y: dict[str, list[np.ndarray]] = {p: [] for p in PHASES}
    Y_att: dict[str, list[np.ndarray]] = {p: [] for p in PHASES}
    names: dict[str, list[str]] = {}
    gaps: list[np.ndarray] = []
    total_meas, total_rows = [], []
    used = [tr for tr in traces if tr.policy in POOLED and tr.steps]
    # attention seconds are usable when every fitted trace recorded them
    with_attention = bool(used) and all(any(st.attention for st in tr.steps) for tr in used)
    one_topk = len({tr.index_topk for tr in used}) == 1
    for tr in used:
        q, g = step_quantities(tr)
        if pad:
            q = padded(q)
        gaps.append(g)
        feats = cost_features(q, tr.num_speculative_tokens, tr.index_topk)
        total_meas.append(np.asarray([sum(st.phases.values()) for st in tr.steps]))
        total_rows.append((feats, tr.policy))
        for p in PHASES:
            if p == "draft_decode_indexer" and not traits(tr.policy).runs_indexer(1):
                continue
            names[p] = [n for n in feats[p] if own_calls or n != "prompt_calls"]
            X[p].append(np.stack([feats[p][n] for n in names[p]], axis=1))
            Y[p].append(np.asarray([st.phases[p] for st in tr.steps], float))
            Y_att[p].append(np.asarray([st.attention.get(p, 0.0) for st in tr.steps], float))
    if not total_meas:
        raise CalibrationError(None, "--trace", "expected a trace of fresh, share or share_recent "
                               "with engine steps to fit the step cost")
    phases: dict[str, PhaseFit] = {}
    attention: dict[str, dict[str, float]] = {}
    for p in PHASES:
        if not X[p]:  # e.g. the indexer phase without a fresh trace: unknown, not zero
            given = ", ".join(sorted({tr.policy for tr in traces})) or "none"
            raise CalibrationError(None, "--trace", f"expected a fresh trace among them to fit the "
                                   f"{p} phase (only fresh runs the indexer at every draft step), "
                                   f"got {given}")
        A, y = np.concatenate(X[p]), np.concatenate(Y[p])
        coef = np.zeros(A.shape[1])
        key, row, call = KEY_FEATURES.get(p, (None, None, None))
        if key is not None and with_attention:
            ki = names[p].index(key)
            att_cols = [ki] + ([names[p].index(call)] if call is not None else [])
            y_att = np.minimum(np.concatenate(Y_att[p]), y)
            att_coef = _nnls(A[:, att_cols], y_att)
            rest = [i for i in range(A.shape[1]) if i != ki]
            coef[rest] = _nnls(A[:, rest], y - y_att)
            coef[att_cols] += att_coef  # the per-call price: the attention's plus the rest's
            attention[p] = {"ns_per_key": 1e9 * float(att_coef[0]),
                            "us_per_call": 1e6 * float(att_coef[1]) if call is not None else 0.0,
                            "r2": _r2(A[:, att_cols] @ att_coef, y_att),
                            "share_pct": 100 * float(y_att.sum() / max(y.sum(), 1e-12))}
        else:
            drop = row if key is not None and one_topk else None  # collinear with the key feature
            cols = [i for i, n in enumerate(names[p]) if n != drop]
            coef[cols] = _nnls(A[:, cols], y)
        res = A @ coef - y
        phases[p] = PhaseFit(names[p], [float(c) for c in coef], _r2(A @ coef, y),
                             float(np.sqrt(np.mean(res ** 2))), int(y.size))
    gap = float(np.median(np.concatenate(gaps))) if any(g.size for g in gaps) else 0.0
    # whole-step fit: R^2 of the step time and error of the summed time per trace
    pred_all, meas_all, per_trace = [], [], []
    for (feats, policy), meas in zip(total_rows, total_meas, strict=True):
        pred = np.zeros_like(meas, dtype=float)
        for p, fit in phases.items():
            if p == "draft_decode_indexer" and not traits(policy).runs_indexer(1):
                continue
            pred = pred + sum(c * feats[p][n] for n, c in zip(fit.features, fit.coef, strict=True))
        pred_all.append(pred)
        meas_all.append(meas)
        per_trace.append({"policy": policy, "steps": int(meas.size), "measured_s": float(meas.sum()),
                          "predicted_s": float(pred.sum()),
                          "error_pct": 100 * (float(pred.sum()) / float(meas.sum()) - 1)})
    pa, ma = np.concatenate(pred_all), np.concatenate(meas_all)
    ss_tot = float(np.sum((ma - ma.mean()) ** 2))
    decode = ma < np.median(ma) * 3
    report = {"step_r2": 1 - float(np.sum((pa - ma) ** 2)) / ss_tot if ss_tot > 0 else math.nan,
              "step_mape_pct": float(np.mean(np.abs(pa[decode] / ma[decode] - 1)) * 100),
              "traces": per_trace, "attention": attention}
    return CostFit(phases, gap, report, indexer_keys)


def fit_traces(traces: Sequence[Trace], sources: Sequence[str] = (),
               normalise: str | None = None, indexer_keys: str = "own",
               draft_calls: str = "shared") -> Calibration:
    """Fit every model to the traces, and measure the step cost's workload-shift error by leaving
    each workload kind out (mtpsim.calibration.shift); `sources` names the traces in the file.
    `normalise` ("level" or "probe"): first put every trace on the traces' median figure
    (mtpsim.calibration.normalise); the file records it as `machine.normalised`.
    `indexer_keys` ("own", "padded"): how the step cost counts the indexer's keys (fit_cost); the
    file records it as `cost.indexer_keys`, and the shift measurement refits the same way;
    `draft_calls` ("shared", "prompt"): fit_cost's, recorded as the features it lists."""
    check_indexer_keys(indexer_keys)
    check_draft_calls(draft_calls)
    if not traces:
        raise CalibrationError(None, "--trace", "expected at least one trace")
    refuse_untimed(traces, sources)
    how = None
    if normalise is not None:
        from mtpsim.calibration.normalise import normalised

        traces, how = normalised(traces, normalise)
    engines = {tr.engine for tr in traces}
    ctx = [r.context_len for tr in traces for st in tr.steps for r in st.requests]
    batch = [st.num_reqs for tr in traces for st in tr.steps if st.num_reqs]
    srcs = []
    for i, tr in enumerate(traces):
        srcs.append({"path": portable(sources[i]) if i < len(sources) else f"<trace {i}>",
                     "policy": tr.policy, "engine": tr.engine, "k": tr.num_speculative_tokens,
                     "index_topk": tr.index_topk, "steps": len(tr.steps),
                     "requests": len({r.id for st in tr.steps for r in st.requests}),
                     "device": tr.meta.device, "threads": tr.meta.threads,
                     "weights": portable(tr.meta.weights), "experiment": portable(tr.meta.experiment),
                     "kind": trace_kind(tr)})
    overlap = fit_overlap(traces)
    cal = Calibration(
        engine=",".join(sorted(engines)), sources=srcs, acceptance=fit_acceptance(traces, overlap),
        overlap=overlap, cost=fit_cost(traces, indexer_keys, draft_calls),
        ranges={"context_len": [float(min(ctx, default=0)), float(max(ctx, default=0))],
                "num_reqs": [float(min(batch, default=0)), float(max(batch, default=0))],
                "k": sorted({float(tr.num_speculative_tokens) for tr in traces}),
                "index_topk": sorted({float(tr.index_topk) for tr in traces})},
        created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        machine={"normalised": how} if how else {})
    return dataclasses.replace(cal, workload_shift=measure_shift(cal, traces))


def refuse_untimed(traces: Sequence[Trace], sources: Sequence[str] = ()) -> None:
    """A trace the step cost would fit whose every phase is 0 s in every step (a vLLM trace:
    the plugin times no phase; an edited file) has nothing to fit, and divided by zero: one
    line naming the file."""
    for i, tr in enumerate(traces):
        if tr.policy in POOLED and tr.steps and not any(any(st.phases.values()) for st in tr.steps):
            why = f"; the trace says: {tr.meta.phases}" if tr.meta.phases else ""
            raise TraceError(sources[i] if i < len(sources) else "--trace", "steps",
                             f"expected phase timings to fit the step cost, got 0 s in every "
                             f"phase of all {len(tr.steps)} steps{why}")


def measure_shift(cal: Calibration, traces: Sequence[Trace]) -> WorkloadShift:
    """The step cost's workload-shift error (mtpsim.calibration.shift): leave each kind out, refit
    the step cost on the rest (counting the indexer's keys as `cal`'s cost did), price the
    left-out kind's steps."""
    used = [tr for tr in traces if tr.policy in POOLED and tr.steps]
    kinds = sorted({trace_kind(tr) for tr in used})
    if len(kinds) < 2:
        return dataclasses.replace(PRIOR, note=(
            f"one workload kind ({kinds[0] if kinds else 'none'}): the shift cannot be measured "
            f"here; {PRIOR_SOURCE}"))
    out: dict[str, dict[str, float]] = {}
    skipped = []
    for kind in kinds:
        rest = [tr for tr in used if trace_kind(tr) != kind]
        try:
            cost = fit_cost(rest, cal.cost.indexer_keys, draft_calls_of(cal.cost))
        except CalibrationError:  # the rest has no fresh trace: the indexer phase is unknown
            skipped.append(kind)
            continue
        fitted = dataclasses.replace(cal, cost=cost)
        sums = {"dec": [0.0, 0.0, 0], "pre": [0.0, 0.0, 0]}
        for tr in (t for t in used if trace_kind(t) == kind):
            q, _ = step_quantities(tr)
            pr = FittedCost(fitted, tr.policy, tr.num_speculative_tokens, tr.index_topk).priced(q)
            priced = sum(pr[p] for p in PHASES) - cost.gap_s  # phase seconds, as a trace has them
            measured = np.asarray([sum(st.phases.values()) for st in tr.steps], float)
            pre = is_prefill(q.prefill_tokens)
            for key, m in (("pre", pre), ("dec", ~pre)):
                sums[key][0] += float(measured[m].sum())
                sums[key][1] += float(np.broadcast_to(priced, measured.shape)[m].sum())
                sums[key][2] += int(m.sum())
        row: dict[str, float] = {}
        for key, name in (("dec", "decode"), ("pre", "prefill")):
            meas, priced_s, n = sums[key]
            if n and meas > 0 and priced_s > 0:
                row[name], row[f"{name}_steps"] = meas / priced_s, float(n)
        out[kind] = row
    sd = {name: _rms([math.log(r[name]) for r in out.values() if name in r])
          for name in ("decode", "prefill")}
    if any(v is None for v in sd.values()):
        return dataclasses.replace(PRIOR, note=(
            f"fewer than two workload kinds could be left out ({', '.join(kinds)}; "
            f"without a fresh trace in the rest: {', '.join(skipped) or 'none'}); {PRIOR_SOURCE}"),
            kinds=out)
    note = (f"{len(out)} kinds; not left out (no fresh trace in the rest): {', '.join(skipped)}"
            if skipped else f"{len(out)} kinds")
    return WorkloadShift(float(sd["decode"]), float(sd["prefill"]), MEASURED, note, out)


def _rms(xs: list[float]) -> float | None:
    return math.sqrt(sum(x * x for x in xs) / len(xs)) if len(xs) >= 2 else None
