"""How long one FP8 (or FP4 / BF16) GEMM takes, from public kernel tables, not from serving rows.

The model (issue #23 item 4; docs/prefill.md, "GEMM rates from kernel tables"): a GEMM of
`groups` x [m, k] @ [k, n] on a GPU with `sms` SMs, a dense tensor peak P and HBM bandwidth B:

- tiles: DeepGEMM's Hopper scheduling, BLOCK_M = 64 rows when m <= 64 else 128, BLOCK_N the
  multiple of 8 in [16, 128] that needs the fewest SM-columns (waves x BLOCK_N) for
  groups x ceil(m / BLOCK_M) x ceil(n / BLOCK_N) tiles over `sms` SMs (its README: "unaligned
  block sizes ... enabling more SMs to work"); each SM runs its tiles at P / sms x e_c, e_c one
  efficiency for 128-row tiles and one for 64-row tiles (a 64-row WGMMA tile reaches less):
  t_c = waves x BLOCK_N x 2 x BLOCK_M x k / (P / sms x e_c)
- streaming: t_m = (groups x (m x k + n x k) fp8 + groups x m x n x 2 bf16) / (B x e_m)
- ridge: the two overlap imperfectly, t = t0 + (t_c^p + t_m^p)^(1/p).

Fitted by least squares in log time on DeepGEMM's last published table (README at a9967bc, 9
April 2025, H800 SXM5: 132 SMs, 1,979 dense FP8 TFLOP/s, 3.35 TB/s; 28 shapes: 18 normal, 4
grouped contiguous, 6 grouped masked; docs/data/kernels/deepgemm.toml) and nothing else
(`fit`, `leave_one_out`; `python benchmarks/gemm_rates_fit.py` prints both). FIT holds the
result; LOO its leave-one-out errors on that table.

Transfer (assumed, stated in docs/prefill.md): H100 / H200 / H20 keep Hopper's tiles and e_c
(H200: same SMs and clocks as the H800, more bandwidth; the H20 check table runs ~25 % faster
than this predicts at large M); Blackwell (B200 / B300 / GB200 / GB300: 148 SMs assumed) and
AMD (CUs as SMs) keep the same tile model and efficiencies at their own peaks, which no public
table with shapes was found to check. `calibration.gemm_efficiency` multiplies the compute rate
around this model; its prior's width covers the residual and the transfer.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

KERNEL_TABLE = Path(__file__).resolve().parents[2] / "docs" / "data" / "kernels" / "deepgemm.toml"
FIT_VERSION = "v2025-04-09"
BLOCK_NS = np.arange(16, 129, 8, dtype=float)  # DeepGEMM SM90 candidate BLOCK_N
SMALL_M = 64  # m <= this: BLOCK_M 64, else 128

# (e_c 128-row tiles, e_c 64-row tiles, e_m, p, t0 seconds): `python benchmarks/gemm_rates_fit.py`
FIT = (0.70976, 0.57921, 1.0, 1.39554, 2.41e-06)
# Leave-one-out relative time errors on the fitted table (same script): median |err|, largest
# |err|, RMS of log(predicted / measured); in-sample: median 4.9 %, largest 23.8 %.
LOO = {"median_abs": 0.056, "max_abs": 0.314, "rms_log": 0.120}

# SMs (CUs on AMD) per GPU by preset name; the tile model's wave quantisation needs them.
# Hopper: 132 (H100 / H200 / H800 SXM), H20 78; Blackwell B200 / GB200 148 (B300 / GB300
# assumed the same); MI300X 304 CUs, MI355X 256 CUs. Unknown names get 132.
SMS = {"H100": 132, "H200": 132, "H800": 132, "H20": 78, "B200": 148, "GB200": 148,
       "B300": 148, "GB300": 148, "MI300X": 304, "MI355X": 256}
DEFAULT_SMS = 132
# largest m-tile count looked up exactly; above it waves are taken as fractional (the last
# wave's idle SMs are < 1 % of the time there)
_TABLE_TILES = 8192


def sms_of(gpu_name: str) -> int:
    """SM count of a GPU preset (DEFAULT_SMS when the name is not in SMS)."""
    return SMS.get(gpu_name.upper(), DEFAULT_SMS)


def _check(groups, m, n, k) -> None:
    for name, v in (("groups", groups), ("n", n), ("k", k)):
        if np.any(np.asarray(v) <= 0) or not np.all(np.isfinite(v)):
            raise ValueError(f"gemm_rates: {name} must be finite and > 0, got {v!r}")
    if np.any(np.asarray(m) < 0) or not np.all(np.isfinite(m)):
        raise ValueError(f"gemm_rates: m must be finite and >= 0, got {m!r}")


@functools.lru_cache(maxsize=256)
def _columns(n: float, sms: int) -> np.ndarray:
    """SM-columns (waves x BLOCK_N, minimised over BLOCK_N) for 0.._TABLE_TILES m-tiles of a GEMM
    with n columns: the lookup `compute_seconds` indexes (one per (n, sms), built once)."""
    tiles_m = np.arange(_TABLE_TILES + 1, dtype=float)[:, None]
    waves = np.ceil(tiles_m * np.ceil(n / BLOCK_NS) / sms)
    return np.min(waves * BLOCK_NS, axis=1)


def m_tiles(groups, m):
    """(m-tiles, BLOCK_M): groups x ceil(m / BLOCK_M) tiles of BLOCK_M rows. `m` may be a mean
    over groups (MoE experts): it is rounded up per group, as every group pads to its tile."""
    block = np.where(np.asarray(m) <= SMALL_M, 64.0, 128.0)
    return groups * np.ceil(np.asarray(m, float) / block), block


def compute_seconds(groups, m, n: float, k: float, sms: int, peak_flops: float,
                    fit: tuple = FIT):
    """Wave-quantised tensor time of `groups` GEMMs of [m, k] @ [k, n] at `peak_flops` (the
    dtype's dense peak, FLOP/s) on `sms` SMs: t_c of the module docstring. Vectorised over
    `groups` and `m`; `n`, `k` scalars (a weight's shape)."""
    _check(groups, m, n, k)
    tiles, block = m_tiles(groups, m)
    e = np.where(block == 64.0, fit[1], fit[0])
    idx = np.minimum(tiles, _TABLE_TILES).astype(np.intp)
    cols = _columns(float(n), int(sms))[idx]
    over = tiles > _TABLE_TILES  # fractional waves beyond the table
    if np.any(over):
        cols = np.where(over, tiles * math.ceil(n / 128.0) * 128.0 / sms, cols)
    return cols * 2.0 * block * k / (peak_flops / sms * e)


def blend(t_c, t_m, p: float = FIT[3]):
    """The ridge: (t_c^p + t_m^p)^(1/p), >= max(t_c, t_m), <= their sum."""
    big = np.maximum(t_c, t_m)
    safe = np.where(big > 0, big, 1.0)
    return big * ((t_c / safe) ** p + (t_m / safe) ** p) ** (1.0 / p)


def gemm_seconds(groups, m, n: float, k: float, sms: int, peak_flops: float, hbm_bytes_s: float,
                 fit: tuple = FIT):
    """Time of `groups` FP8 GEMMs [m, k] @ [k, n] -> bf16 as the fitted model gives it (the
    table's own byte count: fp8 inputs and weights, bf16 output)."""
    t_c = compute_seconds(groups, m, n, k, sms, peak_flops, fit)
    nbytes = groups * (np.asarray(m, float) * k + n * k) + groups * np.asarray(m, float) * n * 2
    t_m = nbytes / (hbm_bytes_s * fit[2])
    return fit[4] + blend(t_c, t_m, fit[3])


def load_rows(version: str = FIT_VERSION, path: Path = KERNEL_TABLE) -> dict[str, np.ndarray]:
    """One version of DeepGEMM's table as arrays: groups, m, n, k and the measured seconds."""
    import tomllib

    data = tomllib.loads(path.read_text())
    rows = next(v["rows"] for v in data["version"] if v["name"] == version)
    out = {f: np.array([r[f] for r in rows], float) for f in ("groups", "m", "n", "k", "tflops")}
    out["seconds"] = 2 * out["groups"] * out["m"] * out["n"] * out["k"] / (out["tflops"] * 1e12)
    return out


def _predict(fit, rows, gpu) -> np.ndarray:
    return np.array([gemm_seconds(g, m, n, k, gpu[0], gpu[1], gpu[2], tuple(fit))
                     for g, m, n, k in zip(rows["groups"], rows["m"], rows["n"], rows["k"],
                                           strict=True)])


H800 = (132, 1979e12, 3.35e12)  # SMs, dense FP8 FLOP/s, HBM bytes/s


def fit(rows: dict[str, np.ndarray], start: tuple = FIT, gpu: tuple = H800) -> tuple:
    """Least squares in log time over `rows` (load_rows), bounded: efficiencies in [0.1, 1],
    p in [1, 8], t0 in [0, 50 us]."""
    from scipy.optimize import least_squares

    res = least_squares(lambda th: np.log(_predict(th, rows, gpu) / rows["seconds"]), start,
                        bounds=([0.1, 0.1, 0.1, 1.0, 0.0], [1.0, 1.0, 1.0, 8.0, 50e-6]))
    return tuple(float(x) for x in res.x)


def leave_one_out(rows: dict[str, np.ndarray], gpu: tuple = H800) -> np.ndarray:
    """Relative error (predicted / measured - 1) of each row under a fit to the other rows."""
    errs = []
    for i in range(len(rows["seconds"])):
        keep = {f: np.delete(v, i) for f, v in rows.items()}
        one = {f: v[i:i + 1] for f, v in rows.items()}
        errs.append(float(_predict(fit(keep, FIT, gpu), one, gpu)[0] / one["seconds"][0] - 1))
    return np.array(errs)
