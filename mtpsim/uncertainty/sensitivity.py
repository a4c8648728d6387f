"""Which parameter drives each reported delta, and what to measure next.

Per parameter: the Spearman rank correlation of the delta with the parameter across the prior
draws (sign and strength), and a first-order share of the delta's variance, Var(E[delta | x]) /
Var(delta), estimated by averaging the delta within quantile bins of x (a binned Sobol index,
noisy at a few dozen draws: read it as a ranking). Parameters a single measurement pins are
grouped; the group with the largest summed share is the measurement that would narrow the
interval most.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

import numpy as np

from mtpsim.dataclass import dataclass

# measurement -> the parameters it pins (every prior in mtpsim.uncertainty.priors.PARAMS is in
# one group: a drawn prior outside every group would count toward no measurement)
GROUPS: dict[str, tuple[str, ...]] = {
    "acceptance trace": ("critical_entries", "overlap_agreement", "overlap_step_exponent",
                         "target_agreement", "request_sigma", "critical_step_exponent",
                         "critical_lk_exponent", "acceptance_scale"),
    "draft-step phase timing": ("indexer_cost", "kernel_floor_us"),
    "sharing-off row": ("mem_efficiency", "compute_efficiency", "gemm_efficiency",
                        "comm_efficiency", "overhead_ms", "eager_overhead_ms", "moe_imbalance",
                        "host_us_per_request", "frontend_ms_per_request",
                        "frontend_us_per_chunk", "sort_sampler_cost", "clean_row_gbps"),
    "real run at this configuration": ("z_time", "z_time_policy", "z_accept", "z_accept_policy",
                                       "calibration refit", "workload shift"),
}


@dataclass(frozen=True, slots=True)
class Sensitivity:
    param: str
    rho: float  # Spearman rank correlation
    share: float  # binned first-order variance share


def _ranks(x: np.ndarray) -> np.ndarray:
    r = np.empty(len(x))
    r[np.argsort(x, kind="stable")] = np.arange(len(x))
    return r


def first_order(x: np.ndarray, y: np.ndarray, bins: int | None = None) -> float:
    n = len(y)
    if n < 8 or np.var(y) == 0:
        return 0.0
    bins = bins or max(2, min(8, n // 8))
    idx = np.minimum((_ranks(x) * bins / n).astype(int), bins - 1)
    means = np.array([y[idx == b].mean() for b in range(bins)])
    counts = np.array([(idx == b).sum() for b in range(bins)])
    between = float(np.sum(counts * (means - y.mean()) ** 2) / n)
    # remove the bias of binning pure noise: each bin mean carries Var(y) / count of it
    bias = float(np.var(y) * bins / n)
    return max(0.0, (between - bias) / float(np.var(y)))


def table(inputs: Mapping[str, np.ndarray], y: np.ndarray) -> list[Sensitivity]:
    """Sensitivities of `y` to every input (columns over the same draws), largest first."""
    out = []
    ry = _ranks(y)
    for name, x in inputs.items():
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            out.append(Sensitivity(name, 0.0, 0.0))
            continue
        rho = float(np.corrcoef(_ranks(x), ry)[0, 1])
        out.append(Sensitivity(name, rho, first_order(x, y)))
    return sorted(out, key=lambda s: -max(s.share, s.rho ** 2))


def measure_next(sens: list[Sensitivity]) -> tuple[str, float, list[str]]:
    """(measurement, the summed first-order share of its parameters, its parameters ranked) for
    the measurement whose parameters explain the most variance; when no share clears the
    noise (few draws), squared rank correlations rank the groups instead."""
    use_rho = all(s.share == 0 for s in sens)
    best = ("", -1.0, [])
    for group, params in GROUPS.items():
        members = [s for s in sens if s.param in params]
        total = sum(s.rho ** 2 if use_rho else s.share for s in members)
        if total > best[1]:
            best = (group, min(total, 1.0), [s.param for s in members])
    return best


def command_for(group: str, experiment: str, calibrated: bool) -> str:
    """The exact command that makes the measurement: shell lines (joined by newlines), each one
    an `mtpsim` command that runs as printed; prose only after a `#`."""
    exp = shlex.quote(str(experiment))
    if calibrated:
        return (f"mtpsim run-real {exp} --engine reference --out runs/measure  "
                "# then refit: mtpsim simulate ... --trace runs/measure/fresh.trace.jsonl "
                "--trace runs/measure/share.trace.jsonl --save-calibration F --bootstrap 32")
    if group == "acceptance trace":
        return (f"mtpsim run-real {exp} --engine vllm --trace --out runs/trace && "
                f"mtpsim simulate {exp} --trace runs/trace/fresh.trace.jsonl "
                "--trace runs/trace/share.trace.jsonl  # fits kappa, c, its decay and sigma")
    if group == "draft-step phase timing":
        # a served vLLM run is one round (no paired rounds to cancel drift): three repeats, each
        # compared on its own
        return "\n".join(
            f"mtpsim run-real {exp} --engine vllm -p fresh -p share --out runs/ab-{i} && "
            f"mtpsim compare runs/ab-{i}  # repeat {i} of 3" + (
                ": the per-step time the MTP indexer costs at draft steps >= 1" if i == 1 else "")
            for i in (1, 2, 3))
    if group == "sharing-off row":
        return (f"mtpsim run-real {exp} --engine vllm -p fresh --out runs/fresh && "
                f"mtpsim calibrate {exp}  # with the row in [calibration.measured.fresh]")
    return f"mtpsim run-real {exp} --engine vllm --out runs/here  # a row at this configuration"
