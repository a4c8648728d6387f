"""How much of the fresh top-k selection a reuse policy's selection still contains.

For draft step s (query at p+s, p = last accepted token, context L = p+1 keys up to p) the fresh
selection F holds n_f = min(L+s, K) positions of [0, p+s]; the reused row R (step 0's, for p)
holds min(L, K) positions of [0, p]. Overlap o = |R ∩ F| / |F|.

Assumptions (docs/simulator.md): the s drafted positions p+1..p+s are always in F (recency; exact
when L+s <= K); among the older positions, R agrees with F on a share
    phi(L, s) = r + (1 - r) * c ** (s ** delta),   r = min(1, K/L)
(r: what chance alone gives; c: agreement beyond chance of consecutive steps, from the public
35-50 % top-2048 overlap at 68K context; delta: how it decays with the gap s). Hence
    share:        o = (n_f - s) * phi / n_f          (= L/(L+s) exactly when L+s <= K)
    share_recent: o = (s + (n_f - s) * phi) / n_f    (= 1 when L+s <= K)
    fresh:        o = 1
    target_share: every step (step 0 too) uses the target's last-layer row for p; the MTP indexer
                  agrees with it beyond chance by c_t: o = (n_f - s) * (r + (1 - r) * c_t) / n_f.
"""

from __future__ import annotations

import numpy as np

from mtpsim.policies import POLICIES


def overlap(policy: str, context: np.ndarray, step: int, topk: int, agreement: float,
            step_exponent: float, target_agreement: float) -> np.ndarray:
    """Overlap o in [0, 1] of `policy`'s selection with the fresh one at draft `step` (0-based)
    for each request's `context` (keys up to and including the last accepted token)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    L = np.maximum(np.asarray(context, dtype=float), 1.0)
    if policy == "fresh" or (policy in ("share", "share_recent") and step == 0):
        return np.ones_like(L)
    s = float(step)
    n_f = np.minimum(L + s, topk)
    r = np.minimum(1.0, topk / L)
    if policy == "target_share":
        phi = r + (1.0 - r) * target_agreement
        return np.clip((n_f - s) * phi / n_f, 0.0, 1.0)
    phi = r + (1.0 - r) * agreement ** (s ** step_exponent)
    if policy == "share":
        return np.clip((n_f - s) * phi / n_f, 0.0, 1.0)
    return np.clip((s + (n_f - s) * phi) / n_f, 0.0, 1.0)  # share_recent
