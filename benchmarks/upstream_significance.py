"""Can the PR's -0.24 point acceptance-rate change over 256 requests be told from noise?

The upstream table publishes aggregates only (experiments/pr47352-upstream/*.json). Estimates:
1. Token-level binomial SE of the difference: treats every draft token as independent (wrong:
   tokens of one request share its prompt and context, and a draft's positions are nested).
2. Request-level model: requests independent, per-request acceptance rate with between-request
   SD sigma (points) -> SE(delta) = sigma * sqrt(1/n_a + 1/n_b); the change is significant at
   95 % only if sigma < |delta| / (1.96 sqrt(2/256)).
3. What sigma is: its floor from sampling within a request (a request's ~724 drafts, drafts
   independent, the PR's per-position rates), the sigma the position-0 placebo implies (step 0
   is identical under both policies, so its change is noise), and sigma measured on the reference
   engine's per-request records (result files given with --results), split into a between-request
   part and the within-request sampling part, re-scaled to the PR's drafts per request.
Run: python benchmarks/upstream_significance.py [--results runs/.../fresh.json ...]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from mtpsim.result import Result, load_result

ROOT = Path(__file__).resolve().parents[1]
Z = 1.959964


def draft_variance(marginal: list[float]) -> float:
    """Var(accepted drafts per step) when position i is accepted with marginal rate m_i (nested)."""
    m = np.asarray(marginal, float)
    e1 = m.sum()
    e2 = sum(m[max(i, j)] for i in range(m.size) for j in range(m.size))
    return float(e2 - e1 ** 2)


def per_request_rates(res: Result) -> tuple[np.ndarray, np.ndarray]:
    """(acceptance rate in points, drafts) per request."""
    reqs = [r for r in res.requests or [] if r.num_draft_tokens]
    rate = np.array([100.0 * r.num_accepted_tokens / r.num_draft_tokens for r in reqs])
    return rate, np.array([r.num_drafts for r in reqs], float)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, default=ROOT / "experiments" / "pr47352-upstream")
    ap.add_argument("--results", type=Path, nargs="*", default=[],
                    help="reference-engine results with per-request records")
    args = ap.parse_args()
    a, b = load_result(args.upstream / "fresh.json"), load_result(args.upstream / "share.json")
    n = 256
    k = len(a.get("spec_decode_per_position_acceptance_rates"))
    pa, pb = a.get("spec_decode_acceptance_rate") / 100, b.get("spec_decode_acceptance_rate") / 100
    delta = 100 * (pb - pa)
    ta, tb = a.get("spec_decode_draft_tokens"), b.get("spec_decode_draft_tokens")
    se_tok = 100 * math.sqrt(pa * (1 - pa) / ta + pb * (1 - pb) / tb)
    print(f"upstream: acceptance rate {100 * pa:.2f} % -> {100 * pb:.2f} %: delta {delta:+.2f} points, "
          f"{n} requests per run, {ta:,} / {tb:,} draft tokens")
    print(f"1. token-level binomial: SE(delta) = {se_tok:.3f} points -> z = {delta / se_tok:+.2f} "
          f"({'significant' if abs(delta) > Z * se_tok else 'not significant'}; assumes independent tokens)")
    scale = math.sqrt(2 / n)
    sigma_star = abs(delta) / (Z * scale)
    print(f"2. request-level: SE(delta) = sigma x sqrt(2/{n}) = {scale:.4f} sigma; significant at 95 % "
          f"only if sigma < {sigma_star:.2f} points")
    drafts_per_req = a.get("spec_decode_num_drafts") / n
    marg = a.get("spec_decode_per_position_acceptance_rates")
    within_pr = 100 * math.sqrt(draft_variance(marg) / drafts_per_req) / k
    print(f"3a. within-request sampling alone (drafts independent, {drafts_per_req:.0f} drafts per request): "
          f"sigma >= {within_pr:.2f} points -> 1.96 SE = {Z * within_pr * scale:.3f} points")
    d0 = 100 * (b.get("spec_decode_per_position_acceptance_rates")[0] - marg[0])
    sigma0 = abs(d0) / (math.sqrt(2 / math.pi) * scale)
    print(f"3b. position-0 placebo moved {d0:+.2f} points although step 0 is identical: one draw of "
          f"|N(0, SE)| suggests SE ~ {abs(d0) / math.sqrt(2 / math.pi):.2f}, i.e. a position-0 sigma of "
          f"~{sigma0:.1f} points (within-request floor for position 0: "
          f"{100 * math.sqrt(marg[0] * (1 - marg[0]) / drafts_per_req):.2f})")
    for path in args.results:
        res = load_result(path)
        rate, drafts = per_request_rates(res)
        if rate.size < 3:
            continue
        m = res.get("spec_decode_per_position_acceptance_rates")
        kk = len(m)
        within = 100 * np.sqrt(draft_variance(m) / drafts) / kk  # per request
        total = float(rate.std(ddof=1))
        between = math.sqrt(max(0.0, total ** 2 - float(np.mean(within ** 2))))
        at_pr = math.sqrt(between ** 2 + (100 * math.sqrt(draft_variance(m) / drafts_per_req) / kk) ** 2)
        print(f"3c. {path}: {rate.size} requests, {drafts.mean():.0f} drafts each, rate "
              f"{rate.mean():.1f} %: sigma {total:.2f} points = between {between:.2f} (+) within "
              f"{math.sqrt(float(np.mean(within ** 2))):.2f}; at {drafts_per_req:.0f} drafts per request "
              f"sigma ~ {at_pr:.2f} -> {'significant' if at_pr < sigma_star else 'not significant'} "
              f"(threshold {sigma_star:.2f})")


if __name__ == "__main__":
    main()
