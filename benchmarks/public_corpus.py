"""Score mtpsim's `--uncertainty` intervals on the public DeepSeek-V3.2 corpus.

    python benchmarks/public_corpus.py --write-experiments      # experiments/public/<id>.toml
    python benchmarks/public_corpus.py --uncertainty 32 --out runs/public-corpus

Each expressible row of docs/data/public/rows.toml becomes an experiment with no calibration
block (what a new user, or `advise`, runs for a new deployment); every row is simulated with
`--uncertainty N` through the library call (`mtpsim.uncertainty.run.propagate`), and each
measured figure is scored against its 90 % interval. Printed per metric group (TTFT, TPOT,
throughput; ITL and E2EL apart), train and test apart, vLLM and other engines apart: coverage,
median |error| of the predicted median, median relative half-width, median relative interval
score (Gneiting & Raftery 2007: width + 2/alpha x the miss, over the measured value).
The split (docs/data/public/split.toml) was committed before any prediction was looked at.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "public"
EXPERIMENTS = ROOT / "experiments" / "public"
GROUPS = {"ttft": "TTFT", "tpot": "TPOT", "throughput": "throughput", "itl": "ITL", "e2el": "E2EL",
          "al": "accept len"}
# A source's figure that is a monotone map of one mtpsim summarises: a per-user output speed at one
# request at a time is 1,000 / TPOT (trtllm-bench's token_output_speed_tok_s counts generation
# tokens over generation time, TTFT excluded), so its interval's ends are the TPOT interval's ends
# mapped; scored in the TPOT group. A source's acceptance length (tokens a step keeps) is mtpsim's.
DERIVED = {"output_speed_per_user": ("mean_tpot_ms", lambda ms: 1000.0 / ms)}
ALIASES = {"acceptance_length": "spec_decode_acceptance_length"}
# vLLM's defaults for the online server (vllm/engine/arg_utils.py, 0.33.0): >= 160 GB GPUs get a
# 16,384-token step budget, >= 70 GB ones 8,192; both 1,024 running requests
BIG_GPU_GIB = 160
SHAREGPT_SIGMA = 1.0  # assumed lognormal spread of ShareGPT lengths (not fitted to any row)
# vllm bench serve keeps ShareGPT pairs with prompt <= 1024 and prompt + output <= 2048 tokens
# (vLLM 0.33.0 benchmarks/datasets/datasets.py is_valid_sequence; the same since v0.6)
SHAREGPT_MAX_TOTAL = 2048
# Every vLLM row of the corpus predates vLLM PR #54394 (2026-08-30: "The CUDA DSA prefill indexer
# currently recomputes the same logits and Top-K results on every tensor-parallel rank"), so its
# engines scored every prompt row on every TP rank (indexer_row_sharding = false).
# vLLM before PR #32525 (merged 2026-01-17) ran one API server in front of
# all data-parallel ranks unless --api-server-count said otherwise
ONE_API_SERVER_VERSIONS = ("0.13.0", "nightly (Dec 2025)")
# vLLM versions released before async scheduling became the default (vLLM PRs #27614 and #31998,
# both first in v0.14.0, January 2026): their engine core schedules and processes outputs
# between GPU steps, not during them
SERIAL_HOST_VERSIONS = ("0.13.0", "nightly (Dec 2025)", "0.11.0", "0.7.4.dev181+gf35f8e22",
                        "0.7.3.dev138+g21f6ca217 (ROCm)")
# vLLM versions whose default engine was V0 (V1 became the default in v0.8.0): the host prior of
# calibration.host_us_per_request rests on V1's scheduler (vLLM PR #46112, benchmarks/
# vllm_host_cost.py), so these rows keep the V1-on-a-2-core-VM prior it had before, which V0's one
# public figure does not undercut (vLLM issue #6801: ~20 ms of host time a step at 200 running
# requests, ~100 us each)
V0_ENGINE_VERSIONS = ("0.7.4.dev181+gf35f8e22", "0.7.3.dev138+g21f6ca217 (ROCm)")
V0_HOST_PRIOR = "loguniform(20, 80)"
# SGLang's one tokenizer manager admits a request faster than vLLM 0.13's API server: a per-engine
# prior on calibration.frontend_ms_per_request, fitted on the SGLang training rows only (the three
# GPUStack DP8 ShareGPT rows at t = 0, whose median TTFT asks ~7.6 ms and P99 TTFT ~4.7 ms at the
# other priors' medians, docs/public-corpus.md "SGLang's DP rows"), spanning both asks, widened
SGLANG_FRONTEND_PRIOR = "loguniform(4, 10)"
# vLLM versions before the Triton top-k/top-p kernels (PR #33538; PR #32558 still called main's
# sampler sort-based on 18 January 2026, and 0.14.1 is a patch release of 0.14): `apply_top_k_top_p`
# sorts every sampled row's whole vocabulary (FlashInfer's sampler was opt-in)
SORT_SAMPLER_VERSIONS = (*SERIAL_HOST_VERSIONS, "0.14.1")
# Engines that called FlashMLA's BF16 sparse kernel without each row's count of valid top-k
# entries, so it multiplied the full -1-padded top-k width for every query row: vLLM before PR
# #36616 (opened 2026-03-10, approved 2026-06-05; every vLLM version of the corpus but the PR
# #47352 main of July 2026) and SGLang before PR #31128 (2026-07-14: its DSA backend "never passed
# it, so every row whose context is shorter than index_topk scanned the full -1-padded top-k
# width for nothing")
FULL_WIDTH_VERSIONS = {"vllm": ("0.13.0", "nightly (Dec 2025)", "0.14.1",
                                "main (Feb 2026, before PR #33680)"),
                       "sglang": ("0.5.6.post2",)}
# vLLM versions before PR #47327 (opened 2026-07-01: "Adds a fast path when all prefills in a batch
# have seq_len <= topk, routing to dense MHA instead of sparse MQA"): every prompt row went through
# the sparse MLA kernel. SGLang is not listed: its NSA backend runs prefills of up to 2,048 tokens
# as FlashAttention varlen MHA on H200 since PR #11892 (2025-10-21; documented by PR #12868,
# 2025-11-08: "the NSA backend uses standard MHA automatically"), before 0.5.6.post2. The PR #47352
# rows' main (July 2026) is not listed either: their 10,240-token prompts never end within top-k.
MQA_PREFILL_VERSIONS = {"vllm": ("0.13.0", "nightly (Dec 2025)", "0.14.1",
                                 "main (Feb 2026, before PR #33680)")}
# vLLM versions before PR #33568 (opened 2026-02-02: "[Perf] Disable clean_logits in deepgemm
# fp8_mqa_logits kernel", against v0.16.0rc0, where deep_gemm.py still passed clean_logits=True;
# read as True in 0.13.0's own wheel): DeepGEMM filled each indexer logits row with -inf outside its
# keys, a decode row max_model_len wide. The February 2026 main is listed because PR #33680's
# table runs a separate `clean_logits=False` arm beside its main (assumed: its main still filled).
CLEAN_LOGITS_VERSIONS = {"vllm": ("0.13.0", "nightly (Dec 2025)", "0.14.1",
                                  "main (Feb 2026, before PR #33680)")}
# DeepSeek-V3.2's model card recommends temperature 1.0 and top_p 0.95 for local deployment; vLLM
# serves the checkpoint's generation config as the default, assumed to carry them
DEEPSEEK_TOP_P = 0.95
# DeepSeek-R1-0528's generation config (served as the default the same way) samples at
# temperature 0.6, top_p 0.95, the model card's recommendation (assumed, not read from the file)
R1_TEMPERATURE = 0.6
# rows of DeepSeek-V3/R1 (dense MLA, no DSA) are written with the `deepseek-v3` preset (family mla)
MLA_MARK = "model-family:mla"
# rows measured with SGLang's bench_serving.py, whose requests ask for temperature 0.0 (greedy;
# assumed from its request payloads, not read in the copy the source used)
GREEDY_CLIENT_MARK = "sglang-bench-serving"
# rows measured with TensorRT-LLM's trtllm-bench: an in-process client whose SamplingParams leave
# top_k and top_p unset (the C++ runtime's 0 and 0), which TensorRT-LLM runs as greedy decoding
TRTLLM_BENCH_MARK = "trtllm-bench"
# rows whose run stored its KV cache in FP8 (the source says so): engine.kv_cache_dtype = "fp8"
FP8_KV_MARK = "kv-cache:fp8"
# rows measured by SGLang's bench_serving at its default --random-range-ratio 0: each length uniform
# from 1 to the stated one; the row's lengths are the means of the printed totals, so the experiment
# draws uniformly from 1 to twice that mean less one (the same mean, the same shape)
RANGE_RATIO0_MARK = "random-range-ratio:0"


def load() -> tuple[list[dict], dict[str, str]]:
    rows = tomllib.loads((DATA / "rows.toml").read_text())["row"]
    split = tomllib.loads((DATA / "split.toml").read_text())["split"]
    return rows, split


def _engine_defaults(row: dict) -> tuple[int, int]:
    from mtpsim.spec import experiment_from_dict

    hw = experiment_from_dict({"hardware": {"preset": row["gpu"]}}).hardware
    return 1024, (16384 if hw.memory_gib >= BIG_GPU_GIB else 8192)


def engine_layout(row: dict) -> tuple[int, int]:
    """(tp per data-parallel rank, dp): the row's own numbers, but SGLang's DP attention
    (`--tp-size 8 --dp-size 8 --enable-dp-attention`) counts all GPUs in --tp-size, its attention
    split into --dp-size ranks of tp / dp GPUs each (SGLang's attention TP size is tp_size //
    dp_size), the MoE over all of them: mtpsim's engine.dp with engine.tp = tp / dp."""
    if row["engine"] == "sglang" and row["dp"] > 1 and "--enable-dp-attention" in row["flags"]:
        return row["tp"] // row["dp"], row["dp"]
    return row["tp"], row["dp"]


def _flag_value(flags: str, name: str) -> str | None:
    """The value after `name` in a command line, written `name value` or `name=value`."""
    tokens = flags.split()
    for i, token in enumerate(tokens):
        if token == name and i + 1 < len(tokens):
            return tokens[i + 1]
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    return None


def experiment_text(row: dict) -> str:
    """The experiment a user would write for this row (vLLM defaults where the row is silent)."""
    seqs, mbt = _engine_defaults(row)
    cudagraph = "full_and_piecewise"
    policy = "share" if "policy:share" in row["marks"] else "fresh"
    flags = row["flags"]
    # vLLM's step token budget, else TensorRT-LLM's (and its batch size)
    mbt = int(_flag_value(flags, "--max-num-batched-tokens") or _flag_value(flags, "--max_num_tokens")
              or mbt)
    seqs = int(_flag_value(flags, "--max_batch_size") or seqs)
    max_len = int(_flag_value(flags, "--max-model-len") or _flag_value(flags, "--context-length") or 0)
    tp, dp = engine_layout(row)
    sglang_dp = row["engine"] == "sglang" and dp > 1
    fp8_kv = FP8_KV_MARK in row["marks"] or (_flag_value(flags, "--kv-cache-dtype") or "").startswith("fp8")
    if "pr47352" in row["id"]:  # the PR's server flags (experiments/pr47352.toml)
        seqs, mbt, cudagraph = 64, 8192, "full_decode_only"
    name = "nvidia/DeepSeek-V3.2-NVFP4" if row["quantization"] == "nvfp4" else "deepseek-ai/DeepSeek-V3.2"
    mla = MLA_MARK in row["marks"]  # DeepSeek-V3/R1: no indexer, so no indexer / top-k settings
    preset, name = ("deepseek-v3", row["model"]) if mla else ("deepseek-v3.2", name)
    sharegpt = row["dataset"] == "sharegpt"
    real = row["dataset"].startswith("real")  # real prompts, not named: the stated fixed lengths
    lines = [
        f"# Public row {row['id']} (docs/data/public/rows.toml), {row['engine']} {row['engine_version']}",
        f"# {row['section']}",
        "# Written by `python benchmarks/public_corpus.py --write-experiments`: no calibration",
        "# block, vLLM's defaults where the source is silent.",
        f'description = "{row["id"]}: {row["num_gpus"]} x {row["gpu"].upper()} TP{row["tp"]}, '
        f'{row["dataset"]}, k={row["k"]}"',
        "seed = 0",
        f'policies = ["{policy}"]',
        "", "[model]", f'preset = "{preset}"', f'name = "{name}"',
        f'quantization = "{row["quantization"]}"',
        "", "[hardware]", f'preset = "{row["gpu"]}"',
        "", "[engine]", f"tp = {tp}",
        *([f"dp = {dp}", f"ep = {'true' if row['ep'] else 'false'}"] if dp > 1
          else ["ep = true  # the experts spread over the TP ranks"] if row["ep"] else []),
        *(["indexer_row_sharding = false  # every TP rank scored every prompt row before vLLM PR #54394"]
          if row["engine"] == "vllm" and row["tp"] > 1 and not mla else []),
        *(["sparse_topk_length = false  # full top-k width per row before vLLM PR #36616 / SGLang PR #31128"]
          if row["engine_version"] in FULL_WIDTH_VERSIONS.get(row["engine"], ()) and not mla
          else []),
        *(["dense_short_prefill = false  # sparse MQA for every prompt row before vLLM PR #47327"]
          if row["engine_version"] in MQA_PREFILL_VERSIONS.get(row["engine"], ()) and not mla
          else []),
        *(["indexer_clean_logits = true  # DeepGEMM's -inf fill of the logits before vLLM PR #33568"]
          if row["engine_version"] in CLEAN_LOGITS_VERSIONS.get(row["engine"], ()) and not mla
          else []),
        *(["api_server_count = 1  # vLLM's default before PR #32525"]
          if dp > 1 and row["engine_version"] in ONE_API_SERVER_VERSIONS else []),
        *(["api_server_count = 1  # SGLang: one tokenizer manager in front of every DP rank"]
          if sglang_dp else []),
        *(['kv_cache_dtype = "fp8"  # the source\'s run kept its KV cache in FP8']
          if fp8_kv else []),
        f"max_num_seqs = {seqs}",
        *([f"max_model_len = {max_len}"] if max_len else []),
        f"max_num_batched_tokens = {mbt}", f'cudagraph_mode = "{cudagraph}"',
        *(["async_scheduling = false  # before vLLM 0.14.0's default"]
          if row["engine"] == "vllm" and row["engine_version"] in SERIAL_HOST_VERSIONS else []),
        *(['sampler = "sort"  # top-k/top-p by a full-vocabulary sort, before vLLM\'s Triton kernels']
          if row["engine"] == "vllm" and row["engine_version"] in SORT_SAMPLER_VERSIONS else []),
        "", "[speculative]", f"num_speculative_tokens = {row['k']}",
        "", "[workload]", f"num_prompts = {row['num_prompts']}",
        f"input_len = {round(row['input_len'])}", f"output_len = {round(row['output_len'])}",
    ]
    if sharegpt:
        lines += ['input_len_distribution = "lognormal"', f"input_len_spread = {SHAREGPT_SIGMA}",
                  'output_len_distribution = "lognormal"', f"output_len_spread = {SHAREGPT_SIGMA}",
                  f"max_total_len = {SHAREGPT_MAX_TOTAL}  # vllm bench serve's ShareGPT filter",
                  "ignore_eos = false"]
    elif real:
        lines += ["ignore_eos = true  # the source's stated ISL / OSL (its dataset is not named)"]
    elif RANGE_RATIO0_MARK in row["marks"]:
        lines += ['input_len_distribution = "uniform"  # bench_serving: 1 .. the stated length',
                  f"input_len_spread = {1 - 1 / round(row['input_len']):.6f}",
                  'output_len_distribution = "uniform"',
                  f"output_len_spread = {1 - 1 / round(row['output_len']):.6f}",
                  "ignore_eos = true  # bench_serving ignores EOS unless told not to"]
    else:
        lines += ["ignore_eos = true  # the source's token totals are exactly prompts x output_len"]
    if row["max_concurrency"]:
        lines.append(f"max_concurrency = {row['max_concurrency']}")
    rate = row["request_rate"]
    lines.append("request_rate = inf" if math.isinf(rate) else f"request_rate = {rate}")
    # vllm bench serve sends no temperature unless told: the server's default, from the model's
    # generation config, samples (assumed > 0); the PR set 1.0
    greedy = GREEDY_CLIENT_MARK in row["marks"] or TRTLLM_BENCH_MARK in row["marks"]
    lines.append("temperature = 0.0  # SGLang's bench_serving.py asks for greedy sampling"
                 if GREEDY_CLIENT_MARK in row["marks"]
                 else "temperature = 0.0  # trtllm-bench's default SamplingParams decode greedily" if greedy
                 else f"temperature = {R1_TEMPERATURE}  # DeepSeek-R1-0528's generation config" if mla
                 else "temperature = 1.0")
    if "pr47352" not in row["id"] and not greedy:  # the PR's rows keep pr47352.toml's sampling
        lines.append(f"top_p = {DEEPSEEK_TOP_P}  # the model card's recommendation, assumed served")
    if row["k"] and "pr47352" not in row["id"]:  # the PR's rates were measured on its own rows
        lines += ["", "[acceptance]",
                  f'dataset_class = "{"chat" if sharegpt or real else "random"}"  # rates: the PR\'s, '
                  "scaled by this class's prior"]
        lines += _extended_rates("\n".join(lines) + "\n", row["k"])
    if row["engine"] == "vllm" and row["engine_version"] in V0_ENGINE_VERSIONS:
        lines += ["", "[uncertainty.priors]",
                  f'host_us_per_request = "{V0_HOST_PRIOR}"  # V0 engine: its host work per request']
    if row["engine"] == "sglang" and not row["max_concurrency"]:  # drawn only without a limit
        lines += ["", "[uncertainty.priors]",
                  f'frontend_ms_per_request = "{SGLANG_FRONTEND_PRIOR}"  # SGLang\'s tokenizer '
                  "manager, fitted on the SGLang training rows"]
    text = "\n".join(lines) + "\n"
    refusal = _refusal(text)
    return text.replace("\n[model]", f"{REFUSED}{refusal}\n\n[model]", 1) if refusal else text


REFUSED = "# mtpsim refuses it, as vLLM would refuse to start: "


def _extended_rates(text: str, k: int) -> list[str]:
    """For a k beyond the preset's acceptance table, its rates with the last conditional rate
    repeated, written out (the rule `mtpsim sweep` applies to a swept k); nothing otherwise."""
    import tomllib

    from mtpsim.spec import experiment_from_dict
    from mtpsim.sweep import _extend_acceptance

    spec = tomllib.loads(text)
    spec["speculative"]["num_speculative_tokens"] = 1
    extra, notes = _extend_acceptance(experiment_from_dict(spec), k)
    if not extra:
        return []
    rates = extra[0].split("=", 1)[1]
    return [f"per_position = {rates}  # {notes[0]}, as `mtpsim sweep` extends a k"]


def _refusal(text: str) -> str:
    """Why `simulate` would refuse this experiment (one line; '' when it runs)."""
    import tomllib

    from mtpsim.errors import SpecError
    from mtpsim.models.memory import check_fits
    from mtpsim.spec import experiment_from_dict

    try:
        check_fits(experiment_from_dict(tomllib.loads(text)))
    except SpecError as e:
        return str(e).split(": ", 1)[1]
    return ""


def write_experiments(rows: list[dict]) -> list[Path]:
    EXPERIMENTS.mkdir(parents=True, exist_ok=True)
    out = []
    for row in rows:
        if row["expressible"]:
            p = EXPERIMENTS / f"{row['id']}.toml"
            p.write_text(experiment_text(row))
            out.append(p)
    return out


def measured_figures(row: dict) -> dict[str, float]:
    """The row's figures under `vllm bench serve` keys; per-GPU figures times the GPU count."""
    out = {}
    for key, value in row["measured"].items():
        if key.endswith("_per_gpu"):
            out[key.removesuffix("_per_gpu")] = value * row["num_gpus"]
        elif key.endswith("_ms") or key.endswith("throughput") or key in ALIASES:
            out[key] = value
        elif key in DERIVED and row["max_concurrency"] == 1:
            out[key] = value
    return out


def group_of(key: str) -> str:
    if key.endswith("throughput"):
        return "throughput"
    if key in DERIVED:
        return "tpot"
    if key in ALIASES:
        return "al"
    return key.split("_")[1]


def interval_of(summary: dict, key: str) -> tuple[float, float, float] | None:
    """(lo, median, hi) of a measured figure's key from a policy's summary, mapped where the
    figure is a transform of a summarised one (None if the summary lacks it)."""
    src, f = DERIVED.get(key, (ALIASES.get(key, key), None))
    if src not in summary:
        return None
    iv = summary[src]
    if f is None:
        return iv.lo, iv.median, iv.hi
    ends = sorted((f(iv.lo), f(iv.hi)))
    return ends[0], f(iv.median), ends[1]


def score(measured: float, lo: float, med: float, hi: float, alpha: float = 0.1) -> dict:
    miss = max(lo - measured, 0.0) + max(measured - hi, 0.0)
    return {"measured": measured, "median": med, "lo": lo, "hi": hi,
            "inside": lo <= measured <= hi,
            "error_pct": 100 * (med / measured - 1),
            "half_width_pct": 100 * (hi - lo) / 2 / med,
            "interval_score_rel": ((hi - lo) + 2 / alpha * miss) / measured}


def run_row(row: dict, n: int, jobs: int) -> dict:
    from mtpsim.uncertainty.run import PRIOR, propagate

    path = (EXPERIMENTS / f"{row['id']}.toml").relative_to(ROOT)  # errors name it so
    t0 = time.perf_counter()
    run = propagate(str(path), [], n, jobs=jobs, condition=False)
    s = run.summary(PRIOR)["metrics"][run.policies[0]]
    figs = {}
    for key, value in measured_figures(row).items():
        if (iv := interval_of(s, key)) is not None:
            figs[key] = score(value, *iv)
    return {"id": row["id"], "policy": run.policies[0], "wall_s": time.perf_counter() - t0,
            "figures": figs}


def aggregate(results: list[dict], rows: dict[str, dict], split: dict[str, str]) -> list[dict]:
    cells: dict[tuple, list[dict]] = {}
    for r in results:
        row = rows[r["id"]]
        engine = "vllm" if row["engine"] == "vllm" else "other"
        model = model_of(row)
        for key, f in r["figures"].items():
            cells.setdefault((model, split[r["id"]], engine, group_of(key)), []).append(f)
    out = []
    for (model, side, engine, group), fs in sorted(cells.items()):
        out.append({"model": model, "split": side, "engine": engine, "metric": GROUPS[group],
                    "n": len(fs),
                    "coverage": sum(f["inside"] for f in fs) / len(fs),
                    "median_abs_error_pct": statistics.median(abs(f["error_pct"]) for f in fs),
                    "median_signed_error_pct": statistics.median(f["error_pct"] for f in fs),
                    "median_half_width_pct": statistics.median(f["half_width_pct"] for f in fs),
                    "median_interval_score_rel": statistics.median(f["interval_score_rel"] for f in fs)})
    return out


def model_of(row: dict) -> str:
    """"v3.2" (DeepSeek-V3.2, DSA) or "v3-r1" (DeepSeek-V3/R1, dense MLA): scored apart."""
    return "v3-r1" if MLA_MARK in row["marks"] else "v3.2"


def k_pairs(results: list[dict], rows: dict[str, dict]) -> list[dict]:
    """Rows marked k-pair:<id>: measured vs predicted ratio (with MTP / without) per figure."""
    by_id = {r["id"]: r for r in results}
    out = []
    for r in results:
        for mark in rows[r["id"]]["marks"]:
            if mark.startswith("k-pair:") and (base := by_id.get(mark.split(":", 1)[1])):
                for key in ("output_throughput", "median_tpot_ms", "mean_tpot_ms", "median_ttft_ms",
                            "output_speed_per_user"):
                    a, b = r["figures"].get(key), base["figures"].get(key)
                    if a and b:
                        out.append({"with_mtp": r["id"], "without": base["id"], "metric": key,
                                    "measured_ratio": a["measured"] / b["measured"],
                                    "predicted_ratio": a["median"] / b["median"]})
    return out


def print_report(summary: list[dict], pairs: list[dict], n: int) -> None:
    print(f"Public corpus: 90 % intervals of `--uncertainty {n}` (priors only, no calibration)")
    head = (f"{'model':6} {'split':6} {'engine':6} {'metric':10} {'n':>3} {'coverage':>9} {'|err| med':>10} "
            f"{'err med':>8} {'half-w med':>10} {'IS/meas':>8}")
    print(head)
    for c in summary:
        print(f"{c.get('model', 'v3.2'):6} {c['split']:6} {c['engine']:6} {c['metric']:10} "
              f"{c['n']:3d} {100 * c['coverage']:8.0f}% "
              f"{c['median_abs_error_pct']:9.1f}% {c['median_signed_error_pct']:+7.1f}% "
              f"{c['median_half_width_pct']:9.1f}% {c['median_interval_score_rel']:8.2f}")
    if pairs:
        print("\nWith MTP / without, same deployment (measured vs predicted median ratio):")
        for p in pairs:
            print(f"  {p['with_mtp']} / {p['without']}  {p['metric']:>18}: measured "
                  f"{p['measured_ratio']:.3f}, predicted {p['predicted_ratio']:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-experiments", action="store_true",
                    help="write experiments/public/<id>.toml for every expressible row and stop")
    ap.add_argument("--uncertainty", type=int, default=32, help="draws per row (default 32)")
    ap.add_argument("--jobs", "-j", type=int, default=1, help="worker processes per row")
    ap.add_argument("--only", nargs="*", default=None, help="row ids (default: every expressible)")
    ap.add_argument("--out", type=Path, default=None, help="write DIR/public_corpus.json")
    ap.add_argument("--merge", type=Path, nargs="+", default=None, metavar="DIR",
                    help="score the rows of earlier --out runs together (runs of --only subsets, "
                    "e.g. each short enough for a loaded machine) instead of running any")
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    rows, split = load()
    if a.merge:
        return merge(a.merge, rows, split, a.out)
    if a.write_experiments:
        for p in write_experiments(rows):
            print(p.relative_to(ROOT))
        return 0
    if a.only is not None:
        known = {r["id"]: r["expressible"] for r in rows}
        bad = [i for i in a.only if not known.get(i, False)]
        if bad:  # a typo would otherwise score an empty (or smaller) corpus without a word
            print(f"error: --only: {', '.join(bad)}: expected ids of expressible rows in "
                  "docs/data/public/rows.toml (" + ("not expressible" if all(i in known for i in bad)
                                                    else "unknown id") + ")", file=sys.stderr)
            return 2
    chosen = [r for r in rows if r["expressible"] and (a.only is None or r["id"] in a.only)]
    missing = [r["id"] for r in chosen if not (EXPERIMENTS / f"{r['id']}.toml").exists()]
    if missing:
        print(f"error: experiments/public: no experiment for {', '.join(missing)} "
              "(run --write-experiments)", file=sys.stderr)
        return 2
    from mtpsim.errors import UserError

    results, refused = [], {}
    for r in chosen:
        try:
            res = run_row(r, a.uncertainty, a.jobs)
        except UserError as e:  # a setup this commit of mtpsim refuses: reported, not scored
            refused[r["id"]] = str(e)
            print(f"  {r['id']} ({split[r['id']]}): refused: {e}", file=sys.stderr)
            continue
        results.append(res)
        print(f"  {r['id']} ({split[r['id']]}): {res['wall_s']:.1f} s", file=sys.stderr)
    by_id = {r["id"]: r for r in rows}
    summary = aggregate(results, by_id, split)
    pairs = k_pairs(results, by_id)
    print_report(summary, pairs, a.uncertainty)
    for rid, why in refused.items():
        print(f"not scored ({split[rid]}): {rid}: {why}")
    if a.out is not None:
        from mtpsim.fileio import atomic_write_json

        a.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(a.out / "public_corpus.json",
                          {"draws": a.uncertainty, "code": provenance(), "summary": summary,
                           "k_pairs": pairs, "refused": refused,
                           "rows": results, "split": {r["id"]: split[r["id"]] for r in results}})
    return 0


def provenance() -> dict:
    """The checkout that scored the rows: HEAD's commit and whether tracked files differed from it
    (a score JSON is only reproducible from a clean commit), so a shipped file names its code."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                                  timeout=30, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no")) if commit else None
    return {"commit": commit or None, "dirty": dirty}


def merge(dirs: list[Path], rows: list[dict], split: dict[str, str], out: Path | None) -> int:
    """One summary over the rows of several runs' public_corpus.json (same draws each; a row
    in two runs is an error, as are runs with different draws)."""
    results, refused, draws, codes = [], {}, set(), []
    for d in dirs:
        f = d / "public_corpus.json"
        try:
            data = json.loads(f.read_text())
            draws.add(data["draws"])
            results += data["rows"]
            refused.update(data["refused"])
            codes.append({"dir": d.name, **data.get("code", {"commit": None, "dirty": None})})
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {f}: expected a public_corpus.json written by --out ({e})", file=sys.stderr)
            return 2
    ids = [r["id"] for r in results]
    if len(draws) != 1 or len(set(ids)) != len(ids):
        print("error: --merge: expected runs with the same --uncertainty and no row twice "
              f"(draws {sorted(draws)}; rows {sorted(i for i in ids if ids.count(i) > 1)} twice)",
              file=sys.stderr)
        return 2
    by_id = {r["id"]: r for r in rows}
    summary, pairs = aggregate(results, by_id, split), k_pairs(results, by_id)
    n = draws.pop()
    print_report(summary, pairs, n)
    if out is not None:
        from mtpsim.fileio import atomic_write_json

        out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out / "public_corpus.json",
                          {"draws": n, "code": provenance(),
                           "merged": codes,
                           "summary": summary, "k_pairs": pairs, "refused": refused,
                           "rows": results, "split": {r["id"]: split[r["id"]] for r in results}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
