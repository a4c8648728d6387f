"""Fit mtpsim.models.gemm_rates to DeepGEMM's published H800 table and print the fit, its
leave-one-out errors, the other README versions and the check tables (H100, H20) under it.

    python benchmarks/gemm_rates_fit.py

Deterministic (least squares from gemm_rates.FIT); seconds. The printed FIT and LOO are what
mtpsim/models/gemm_rates.py records.
"""

from __future__ import annotations

import tomllib

import numpy as np

from mtpsim.models import gemm_rates as gr


def _errors(fit: tuple, rows: dict, gpu: tuple) -> np.ndarray:
    return gr._predict(fit, rows, gpu) / rows["seconds"] - 1


def main() -> None:
    rows = gr.load_rows()
    fit = gr.fit(rows)
    inside = _errors(fit, rows, gr.H800)
    loo = gr.leave_one_out(rows)
    print("FIT (e_c 128-row, e_c 64-row, e_m, p, t0 s) =", tuple(round(x, 5) for x in fit[:4])
          + (float(f"{fit[4]:.3g}"),))
    for name, e in (("in-sample", inside), ("leave-one-out", loo)):
        print(f"{name}: median |err| {np.median(abs(e)):.3f}, max {abs(e).max():.3f}, "
              f"rms log {np.sqrt(np.mean(np.log1p(e) ** 2)):.3f}")
    print("\ngroups     m      n      k   measured us   fit   loo")
    for i in range(len(loo)):
        print(f"{rows['groups'][i]:6.0f} {rows['m'][i]:6.0f} {rows['n'][i]:6.0f} {rows['k'][i]:6.0f}"
              f" {rows['seconds'][i] * 1e6:10.1f} {inside[i]:+6.3f} {loo[i]:+6.3f}")
    for version in ("v2025-02-25", "v2025-03-25"):
        e = _errors(fit, gr.load_rows(version), gr.H800)
        print(f"README {version} under this fit: median |err| {np.median(abs(e)):.3f}, "
              f"max {abs(e).max():.3f}")
    data = tomllib.loads(gr.KERNEL_TABLE.read_text())
    for check in data["check"]:
        g = check["gpu"]
        gpu = (g["sms"], g["fp8_tflops"] * 1e12, g["hbm_tbps"] * 1e12)
        r = {f: np.array([x[f] for x in check["rows"]], float) for f in ("m", "n", "k")}
        r["groups"] = np.ones_like(r["m"])
        r["seconds"] = np.array([x["time_us"] for x in check["rows"]]) * 1e-6
        e = _errors(fit, r, gpu)
        print(f"\n{check['name']} ({g['name']}): m n k measured_us predicted/measured-1")
        for i in range(len(e)):
            print(f"  {r['m'][i]:6.0f} {r['n'][i]:6.0f} {r['k'][i]:6.0f} "
                  f"{r['seconds'][i] * 1e6:9.1f} {e[i]:+.2f}")


if __name__ == "__main__":
    main()
