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
than this predicts at large M); Blackwell and AMD (CUs as SMs) keep the same tile model and
efficiencies at their own peaks, which no public table with shapes was found to check. The SM
count is the hardware's (`hardware.sms`, set by each GPU preset; sources in docs/hardware.md).
`calibration.gemm_efficiency` multiplies the compute rate around this model; its prior's width
covers the residual and the transfer.
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

# largest m-tile count looked up exactly; above it waves are taken as fractional (the last
# wave's idle SMs are < 1 % of the time there)
_TABLE_TILES = 8192
_TABLE_ROWS = 65536  # rows of one GEMM looked up exactly (`_row_units`)


def _check(groups, m, n, k) -> None:
    for name, v in (("groups", groups), ("n", n), ("k", k)):
        if np.any(np.asarray(v) <= 0) or not np.all(np.isfinite(v)):
            raise ValueError(f"gemm_rates: {name} must be finite and > 0, got {v!r}")
    if np.any(np.asarray(m) < 0) or not np.all(np.isfinite(m)):
        raise ValueError(f"gemm_rates: m must be finite and >= 0, got {m!r}")


_TABLES: dict[tuple, np.ndarray] = {}  # `_columns` and `_row_units`, by shape
_MIN_TABLE = 1024  # a table's first size (entries past 0); it grows by powers of two as asked


def _size(top: int, most: int) -> int:
    """The table size that holds entry `top`: a power of two >= top (at least _MIN_TABLE), at
    most `most`."""
    return min(most, max(_MIN_TABLE, 1 << max(0, top - 1).bit_length()))


def _columns(n: float, sms: int, top: int = _TABLE_TILES) -> np.ndarray:
    """SM-columns (waves x BLOCK_N, minimised over BLOCK_N) for 0..top m-tiles at least (up to
    _TABLE_TILES) of a GEMM with n columns: the lookup `compute_seconds` indexes, one per
    (n, sms), built as far as asked. Each entry is computed on its own (elementwise), so a table
    built to 1,024 tiles holds the first 1,025 entries of one built to 8,192 bit for bit; a
    printed simulate of pr47352 asks up to 1,024 tiles and 8,192 rows (`_row_units`), not the
    8,192 and 65,536 the tables were first built to (docs/speed.md, start-up round 14)."""
    key = ("columns", n, sms)
    table = _TABLES.get(key)
    if table is None or len(table) <= top:
        table = _columns_of(np.arange(_size(top, _TABLE_TILES) + 1, dtype=float), n, sms)
        _keep(key, table)
    return table


def _columns_of(tiles_m: np.ndarray, n: float, sms: int) -> np.ndarray:
    # min over BLOCK_N of ceil(tiles_m x ceil(n / BLOCK_N) / sms) x BLOCK_N, one BLOCK_N at a time
    # (the same float operations per element as a [tiles, BLOCK_N] array and its row minimum, ~4x
    # cheaper to build; a printed simulate builds 9). A BLOCK_N with the same n-tiles as a smaller
    # one never needs fewer SM-columns (same waves, wider block): skipped.
    out = np.full(len(tiles_m), np.inf)
    last = None
    for block_n, per_tile in zip(BLOCK_NS, np.ceil(n / BLOCK_NS), strict=True):
        if per_tile != last:
            np.minimum(out, np.ceil(tiles_m * per_tile / sms) * block_n, out=out)
            last = per_tile
    return out


def _keep(key: tuple, table: np.ndarray) -> None:
    if len(_TABLES) >= 256:  # as the lru caches' bound before (256 shapes each): start again
        _TABLES.clear()
    _TABLES[key] = table


def compute_seconds(groups, m, n: float, k: float, sms: int, peak_flops: float,
                    fit: tuple = FIT):
    """Wave-quantised tensor time of `groups` GEMMs of [m, k] @ [k, n] at `peak_flops` (the
    dtype's dense peak, FLOP/s) on `sms` SMs: t_c of the module docstring. Vectorised over
    `groups` and `m`; `n`, `k` scalars (a weight's shape)."""
    _check(groups, m, n, k)
    return tensor_seconds(groups, m, n, k, sms, peak_flops, False, fit)


def tensor_seconds(groups, m, n: float, k: float, sms: int, peak_flops: float,
                   random_rows: bool = False, fit: tuple = FIT):
    """`compute_seconds` without the shape checks, for the roofline's hot path (its callers pass
    groups > 0, m >= 0); a plain-float fast path for scalar steps. `random_rows`: the groups'
    row counts vary about the mean m (an MoE's experts under routing), so each pays on average
    half a tile of padding above m / BLOCK_M, and at least one tile: groups x max(1, m / BLOCK_M
    + 1/2) m-tiles instead of groups x ceil(m / BLOCK_M)."""
    if not isinstance(m, np.ndarray) and not isinstance(groups, np.ndarray):
        block, e = (64.0, fit[1]) if m <= SMALL_M else (128.0, fit[0])
        per = max(1.0, m / block + 0.5) if random_rows else math.ceil(m / block)
        tiles = groups * per if m > 0 else 0.0
        if tiles > _TABLE_TILES:
            cols = tiles * math.ceil(n / 128.0) * 128.0 / sms
        else:
            at = math.ceil(tiles - 1e-9)
            cols = float(_columns(float(n), int(sms), at)[at])
        return cols * 2.0 * block * k / (peak_flops / sms * e)
    m = np.asarray(m, float)
    scale = 2.0 * k / (peak_flops / sms)
    if not random_rows and not isinstance(groups, np.ndarray) and groups == 1:
        # one GEMM over m rows: a lookup by the row count (ceil: a partial row is a row)
        idx = np.minimum(np.ceil(m), _TABLE_ROWS).astype(np.intp)
        try:  # the table as built so far; grown when it ends before a row asked
            out = _row_units(float(n), int(sms), fit[0], fit[1], 0)[idx] * scale
        except IndexError:
            out = _row_units(float(n), int(sms), fit[0], fit[1], int(idx.max()))[idx] * scale
        over = m > _TABLE_ROWS
        if np.any(over):  # beyond the table: fractional waves of 128-row tiles
            out = np.where(over, np.ceil(m / 128.0) * math.ceil(n / 128.0) * 128.0 / sms
                           * 128.0 / fit[0] * scale, out)
        return out
    small = m <= SMALL_M
    block = np.where(small, 64.0, 128.0)
    per = np.maximum(1.0, m / block + 0.5) if random_rows else np.ceil(m / block)
    tiles = np.where(m > 0, groups * per, 0.0)
    idx = np.minimum(np.ceil(tiles - 1e-9), _TABLE_TILES).astype(np.intp)
    try:
        cols = _columns(float(n), int(sms), 0)[idx]
    except IndexError:
        cols = _columns(float(n), int(sms), int(idx.max()))[idx]
    over = tiles > _TABLE_TILES
    if np.any(over):
        cols = np.where(over, tiles * math.ceil(n / 128.0) * 128.0 / sms, cols)
    return cols * scale * np.where(small, 64.0 / fit[1], 128.0 / fit[0])


def _row_units(n: float, sms: int, e128: float, e64: float, top: int = _TABLE_ROWS) -> np.ndarray:
    """SM-columns x BLOCK_M / e_c of one GEMM with n columns over 0..top rows at least (up to
    _TABLE_ROWS) (times 2 k / (P / sms) it is `tensor_seconds`): built once per shape as far as
    asked (as `_columns`), so a step array costs a lookup."""
    key = ("rows", n, sms, e128, e64)
    table = _TABLES.get(key)
    if table is None or len(table) <= top:
        m = np.arange(_size(top, _TABLE_ROWS) + 1, dtype=float)
        small = m <= SMALL_M
        tiles = np.ceil(m / np.where(small, 64.0, 128.0)).astype(np.intp)
        table = _columns(n, sms, int(tiles[-1]))[tiles] * np.where(small, 64.0 / e64, 128.0 / e128)
        _keep(key, table)
    return table


_BLEND_STEPS = 1 << 16  # `blend` takes (1 + r^p)^(1/p) at the nearest of these steps of r
_BLEND_DIRECT = 512  # arrays up to this size compute their steps' entries, larger ones look up
# ... until a process has blended this many arrays (a printed simulate of pr47352 blends 159):
# from then on every array looks up the table, cheaper per call for `--uncertainty` and advise,
# which simulate many times in one process
_BLEND_DIRECT_CALLS = [256]


def _blend_at(steps: np.ndarray, p: float) -> np.ndarray:
    """(1 + r^p)^(1/p) at r = steps / _BLEND_STEPS (at most 1): the table's entries at `steps`,
    computed elementwise as the table is (bit for bit its entries; the test compares every one)."""
    r = np.minimum(steps / _BLEND_STEPS, 1.0)
    return (1.0 + r ** p) ** (1.0 / p)


@functools.lru_cache(maxsize=4)
def _blend_table(p: float) -> np.ndarray:
    """Every step's entry, r = 0, 1/_BLEND_STEPS, .., 1 (and once more past 1), built on first use
    by an array larger than _BLEND_DIRECT or after the first _BLEND_DIRECT_CALLS arrays (two
    powers over 65,538 entries: a printed simulate's 159 arrays, at most 44 steps each, compute
    theirs; it was built at import before, docs/speed.md start-up round 14)."""
    return _blend_at(np.arange(_BLEND_STEPS + 2), p)


def blend(t_c, t_m, p: float = FIT[3]):
    """The ridge: (t_c^p + t_m^p)^(1/p), >= max(t_c, t_m), <= their sum."""
    if not isinstance(t_c, np.ndarray) and not isinstance(t_m, np.ndarray):
        big = max(t_c, t_m)
        return big * ((t_c / big) ** p + (t_m / big) ** p) ** (1.0 / p) if big > 0 else 0.0
    big = np.maximum(t_c, t_m)
    r = np.minimum(t_c, t_m) / (big + 1e-300)
    if p != FIT[3]:
        return big * (1.0 + r ** p) ** (1.0 / p)
    # nearest of 65,536 steps: within 1e-5 of the formula, and monotone as it is
    steps = (r * _BLEND_STEPS + 0.5).astype(np.intp)
    if steps.size <= _BLEND_DIRECT and _BLEND_DIRECT_CALLS[0] > 0:
        _BLEND_DIRECT_CALLS[0] -= 1
        return big * _blend_at(steps, p)
    return big * _blend_table(p)[steps]


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
