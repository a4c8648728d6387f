"""Conditioning draws on measured rows (`[calibration.measured]`): importance weights.

Noise model, stated: a measured timing figure (output throughput, median TPOT) is the true value
times exp(e), e ~ N(0, timing_noise_pct / 100) (one run of `vllm bench`); a measured acceptance
length is the true value plus N(0, s), s the placebo noise floor of the measured rows (the
position-0 difference between two policies whose step 0 is the same computation, as `mtpsim
compare` computes it), or `acceptance_noise`. TTFT is not conditioned on: it is the check.
The figures of one row come from one run, so their errors are drawn together: a multivariate
normal whose throughput and TPOT errors correlate at -row_timing_correlation (a run that went
fast shows both) and whose acceptance error correlates with them at +/-row_acceptance_correlation
(more accepted tokens per step: more throughput, less TPOT). Both are assumed (docs/uncertainty.md,
"Honest likelihoods"); `verdict_sensitivity` shows what the assumed timing noise does.

The timing level is re-drawn rather than weighted: as `mtpsim calibrate` refits
`mem_efficiency` to the sharing-off row, every draw's timings are scaled by one factor so that
its output throughput matches the level row (the fit policy's, else the first one conditioned
on) up to the row's own noise, exp(timing_sd * z); the draw is then weighted by how well it
reproduces everything else (that row's TPOT and acceptance, the other rows). Without the refit
nearly every draw misses a 2 % window on throughput and a few dozen draws would leave one or
two effective ones.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mtpsim.dataclass import dataclass

CONDITION_METRICS = ("output_throughput", "median_tpot_ms", "spec_decode_acceptance_length")


@dataclass(frozen=True, slots=True)
class NoiseModel:
    timing_sd: float  # log scale
    acceptance_sd: float
    acceptance_source: str
    timing_corr: float = 0.0  # |corr| of a row's throughput and TPOT errors (opposite signs)
    acceptance_corr: float = 0.0  # |corr| of its acceptance error with each timing error

    def describe(self) -> str:
        return (f"measured timings x exp(N(0, {100 * self.timing_sd:.1f} %)); acceptance length "
                f"+ N(0, {self.acceptance_sd:.4f}) ({self.acceptance_source}); one row's errors "
                f"correlated (throughput/TPOT -{self.timing_corr:.2f}, acceptance "
                f"±{self.acceptance_corr:.2f})")

    def corr(self, metrics: tuple[str, ...]) -> np.ndarray:
        """Correlation matrix of a row's errors over `metrics` (CONDITION_METRICS order)."""
        sign = {"output_throughput": 1.0, "median_tpot_ms": -1.0, "spec_decode_acceptance_length": 1.0}
        c = np.eye(len(metrics))
        for i, a in enumerate(metrics):
            for j, b in enumerate(metrics):
                if i != j:
                    acc = "spec_decode_acceptance_length" in (a, b)
                    c[i, j] = sign[a] * sign[b] * (self.acceptance_corr if acc else self.timing_corr)
        return c


def noise_model(measured: Mapping[str, Mapping], u) -> NoiseModel:
    """`u`: UncertaintySpec. The placebo floor needs two rows of step-0-as-fresh policies."""
    import dataclasses

    base = _noise_model(measured, u)
    return dataclasses.replace(base, timing_corr=u.row_timing_correlation,
                               acceptance_corr=u.row_acceptance_correlation)


def _noise_model(measured: Mapping[str, Mapping], u) -> NoiseModel:
    if u.acceptance_noise > 0:
        return NoiseModel(u.timing_noise_pct / 100, u.acceptance_noise, "uncertainty.acceptance_noise")
    from mtpsim.compare import STEP0_AS_FRESH, ABRow, placebo_noise_floor

    rows = [r for p, r in measured.items() if p in STEP0_AS_FRESH
            and isinstance(r.get("spec_decode_per_position_acceptance_rates"), list | tuple)]
    if len(rows) >= 2:
        a = rows[0]["spec_decode_per_position_acceptance_rates"]
        b = rows[1]["spec_decode_per_position_acceptance_rates"]
        ab = [ABRow(f"pos{i}", f"pos{i}", 100 * x, 100 * y, acceptance=True)
              for i, (x, y) in enumerate(zip(a, b, strict=False))]
        floor = placebo_noise_floor(ab)
        if floor and floor["spec_decode_acceptance_length"] > 0:
            return NoiseModel(u.timing_noise_pct / 100, floor["spec_decode_acceptance_length"],
                              "placebo noise floor of the measured rows")
    return NoiseModel(u.timing_noise_pct / 100, 0.01, "assumed 0.01: no placebo pair measured")


def loglik(values: list[dict[str, dict[str, float]]], rows: Mapping[str, Mapping],
           noise: NoiseModel, level: str | None = None) -> np.ndarray:
    """Log-likelihood of the measured `rows` (policy -> metric -> value) per draw, each row's
    figures jointly (multivariate normal with the noise model's correlations); the `level`
    row's throughput is left out (the level refit used it)."""
    ll = np.zeros(len(values))
    for policy, row in rows.items():
        used, cols = [], []
        for m in CONDITION_METRICS:
            meas = row.get(m)
            if policy == level and m == "output_throughput":
                continue
            if not isinstance(meas, int | float):
                continue
            sim = np.array([v[policy][m] for v in values])
            if m == "spec_decode_acceptance_length":
                cols.append((sim - meas) / noise.acceptance_sd)
            else:
                cols.append(np.log(sim / meas) / noise.timing_sd)
            used.append(m)
        if not used:
            continue
        r = np.stack(cols, axis=1)  # [draws, figures]
        prec = np.linalg.inv(noise.corr(tuple(used)))
        ll += -0.5 * np.einsum("ni,ij,nj->n", r, prec, r)
    return ll


def refit_level(values: list[dict[str, dict[str, float]]], z: list[float], level: str,
                row: Mapping, noise: NoiseModel) -> list[dict[str, dict[str, float]]]:
    """Every draw's timings scaled so that `level`'s output throughput is the measured one
    times exp(timing_sd * z) (its measurement noise)."""
    import math

    from mtpsim.uncertainty.draws import THROUGHPUTS
    from mtpsim.uncertainty.summary import TIMING

    out = []
    for v, zi in zip(values, z, strict=True):
        f = v[level]["output_throughput"] / (row["output_throughput"] * math.exp(noise.timing_sd * zi))
        out.append({p: {k: (x / f if k in THROUGHPUTS else x * f if k in TIMING else x)
                        for k, x in m.items()} for p, m in v.items()})
    return out


def normalized(logw: np.ndarray) -> np.ndarray:
    w = np.exp(logw - logw.max())
    return w / w.sum()


def ess(w: np.ndarray) -> float:
    return float(w.sum() ** 2 / np.sum(w ** 2))
