"""benchmarks/transfer_table.py: per size, the overlap curve and the per-step kappa it fits come
back from campaign files drawn with known values, and a size without files reads "not measured"."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np

from mtpsim.models.overlap import agreement_curve, overlap_from_agreement
from mtpsim.models.penalty import keep_factor

ROOT = Path(__file__).resolve().parents[1]
U = {1: (0.4, -0.1), 2: (-0.2, -0.15)}  # true overlap curve per draft step
KAPPA = {1: 3.0, 2: 1.5}
FRESH = [0.8, 0.6, 0.5]  # conditional rates


def _module():
    spec = importlib.util.spec_from_file_location("transfer_table", ROOT / "benchmarks" / "transfer_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _campaign(folder: Path, rng: np.random.Generator) -> None:
    folder.mkdir()
    windows = {}
    for w in range(6):
        recs = []
        for L in (512, 1024, 4096):
            for ratio in (1, 2, 4, 8, 16, 32, 64):
                K = L // ratio
                for s, (u0, u1) in U.items():
                    o = float(overlap_from_agreement("share", L, s, K, agreement_curve(u0, u1, L, K)))
                    recs.append({"context": L, "position": L - 1, "step": s, "ratio": ratio, "topk": K,
                                 "overlap": o + rng.normal(0, 0.01), "mass": 1.0})
        windows[str(w)] = recs
    args = {"weights": "toy", "contexts": [512, 1024, 4096], "params": 1_000_000}
    (folder / "overlap.json").write_text(json.dumps({"args": args, "windows": windows}))
    cells = {}
    for L in (1024, 4096):
        o = {s: float(overlap_from_agreement("share", L, s, 64, agreement_curve(*U[s], L, 64)))
             for s in U}
        for policy in ("fresh", "share"):
            reqs = []
            for _ in range(400):
                drafts, acc = 40, np.zeros(3, int)
                for _ in range(drafts):
                    ok = True
                    for i, a in enumerate(FRESH):
                        p = a * (keep_factor(o[i], KAPPA[i]) if policy == "share" and i else 1.0)
                        ok = ok and rng.random() < p
                        acc[i] += ok
                reqs.append({"drafts": drafts, "accepted_per_pos": acc.tolist()})
            cells[f"{L}|1|{policy}"] = reqs
    (folder / "acceptance.json").write_text(json.dumps({
        "args": {"weights": "toy", "requests": 400, "output_len": 48, "k": 3, "topk": 64, "seed": 0,
                 "params": 1_000_000}, "cells": cells}))


def test_known_overlap_curves_and_kappas_come_back_and_missing_sizes_say_so(tmp_path):
    mod = _module()
    _campaign(tmp_path / "toy", np.random.default_rng(0))
    res = mod.build([tmp_path / "toy", tmp_path / "large"], {}, boot=20, seed=0)
    toy = res["sizes"]["toy"]
    for s, (u0, u1) in U.items():
        got = toy["overlap"]["steps"][s]
        assert math.isclose(got["u0"], u0, abs_tol=0.05) and math.isclose(got["u1"], u1, abs_tol=0.03)
        lo, hi = mod.ci([b[0] for b in got["boot"]])
        assert lo <= got["u0"] <= hi
    for s, k in KAPPA.items():
        got = toy["penalty"]["steps"][s]
        assert math.isclose(got["kappa"], k, rel_tol=0.25), (s, got["kappa"])
        lo, hi = mod.ci(got["boot"])
        assert lo < k < hi
    md = mod.markdown(res)
    assert "| large |" in md.splitlines()[0] and "not measured" in md
    assert res["sizes"]["large"]["overlap"] is None
    lo, hi = res["dsv32"]["agreement"][1]
    truth = [float(x) for x in agreement_curve(*U[1], np.array([4.0, 64.0]) * 2048, 2048)]
    assert lo <= min(truth) and max(truth) <= hi


def test_the_engine_fits_l_over_k_exponent_is_carried_with_its_ci(tmp_path):
    mod = _module()
    _campaign(tmp_path / "toy", np.random.default_rng(1))
    fit = tmp_path / "fit.json"  # benchmarks/penalty_model.py --out, cut to what the table reads
    fit.write_text(json.dumps({
        "params": {"kappa": [4.4], "kappa_step": [5.6, 4.6, 3.9], "kappa_lk": [5.5, 4.6, 3.8, 0.29]},
        "ci": {"kappa": [[4.1, 4.8]], "kappa_step": [[4.6, 60.0], [4.1, 5.5], [3.5, 4.6]],
               "kappa_lk": [[4.6, 60.0], [4.1, 5.6], [3.4, 4.4], [0.12, 0.55]]},
        "share": {"kappa_lk": {"r2": 0.95}}}))
    res = mod.build([tmp_path / "toy"], {"toy": fit}, boot=10, seed=0)
    eng = res["sizes"]["toy"]["engine_penalty"]
    assert eng["lk_exponent"] == 0.29 and eng["lk_exponent_ci"] == [0.12, 0.55]
    assert res["dsv32"]["lk_exponent"] == [0.12, 0.55]
    row = next(line for line in mod.markdown(res).splitlines() if line.startswith("| gamma"))
    assert "0.29 [0.12, 0.55]" in row


def test_a_trend_that_turns_between_sizes_says_so():
    mod = _module()
    up = mod.trend([(1e6, 0.1, (0.0, 0.2)), (4e6, 0.3, (0.2, 0.4)), (2e7, 0.5, (0.4, 0.6))])
    turns = mod.trend([(1e6, 0.75, (0.7, 0.8)), (4e6, 0.13, (0.0, 0.3)), (2e7, 0.81, (0.6, 1.0))])
    assert "not monotonic" not in up and "not monotonic" in turns and "not stable" in turns
