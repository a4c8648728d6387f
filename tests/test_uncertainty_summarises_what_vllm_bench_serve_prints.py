"""`--uncertainty` gives an interval for every figure `vllm bench serve` prints (mean, median,
P90, P99 of TTFT, TPOT, ITL, E2EL; the three throughputs) under its key names, in the summary
and the JSON; `--metrics` chooses the table's rows; a bad choice is one line and exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.uncertainty.draws import BENCH_METRICS, Draw
from mtpsim.uncertainty.run import PRIOR, propagate
from mtpsim.uncertainty.summary import Spread, adjust

ROOT = Path(__file__).resolve().parents[1]
EXP = str(ROOT / "experiments" / "pr47352.toml")
SMALL = ["workload.num_prompts=24", "workload.max_concurrency=8", "workload.input_len=2048",
         "workload.output_len=128"]


@pytest.fixture(scope="module")
def run():
    return propagate(EXP, SMALL, 4, jobs=1, condition=False)


def test_every_bench_serve_key_has_an_interval_per_policy(run):
    s = run.summary(PRIOR)["metrics"]
    for policy in run.policies:
        for key in BENCH_METRICS:
            iv = s[policy][key]
            assert iv.lo <= iv.median <= iv.hi, (policy, key)
        # the statistics of one draw's requests are ordered, so their medians are too
        for m in ("ttft", "tpot", "e2el"):
            assert s[policy][f"median_{m}_ms"].median <= s[policy][f"p99_{m}_ms"].median
        assert s[policy]["total_token_throughput"].median > s[policy]["output_throughput"].median


def test_json_carries_the_same_keys(run):
    js = run.to_json()["summary"][PRIOR]["metrics"]
    assert set(BENCH_METRICS) <= set(js[run.policies[0]])


def test_timing_discrepancy_moves_latencies_up_and_throughputs_down():
    raw = {"fresh": {k: 100.0 for k in BENCH_METRICS} | {"spec_decode_acceptance_length": 2.5}}
    draw = Draw(index=0, seed=0, unit={}, values={}, z={"z_time": 1.0, "z_time_policy": 0.0,
                                                         "z_accept": 0.0, "z_accept_policy": 0.0})
    out = adjust(raw, draw, Spread(0.1, 0.0, 0.0), "fresh")["fresh"]
    for k in BENCH_METRICS:
        if k.endswith("_ms"):
            assert out[k] > 100.0, k
        elif "throughput" in k:
            assert out[k] < 100.0, k


@pytest.mark.parametrize("args, flag", [(["--uncertainty", "2", "--metrics", "mean_ttft"], "--metrics"),
                                        (["--metrics", "all"], "--metrics")])
def test_bad_metrics_choice_is_one_line_exit_2(args, flag):
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", EXP, *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and flag in r.stderr


@pytest.mark.slow
def test_metrics_all_tables_the_p99_rows_and_json_has_them():
    cmd = [sys.executable, "-m", "mtpsim", "simulate", EXP, "--uncertainty", "2", "-j", "1",
           *[a for s in SMALL for a in ("--set", s)]]
    r = subprocess.run([*cmd, "--metrics", "mean_ttft_ms,p99_tpot_ms"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Mean TTFT (ms)" in r.stdout and "P99 TPOT (ms)" in r.stdout
    assert "Median TPOT (ms)" not in r.stdout.split("Sensitivity")[0].split("(priors only)")[1]
    js = json.loads(subprocess.run([*cmd, "--json"], cwd=ROOT, capture_output=True, text=True,
                                   timeout=300).stdout)
    assert "p99_e2el_ms" in js["summary"]["prior"]["metrics"]["fresh"]
