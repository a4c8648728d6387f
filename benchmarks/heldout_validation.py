"""Held-out fidelity of the trace-calibrated simulator on the reference engine (CPU).

1. Real run of the one calibration configuration (experiments/heldout/calibrate.toml).
2. Fit acceptance, overlap and step cost to its traces -> experiments/heldout/calibration.json.
3. For each held-out configuration (other k, context length, concurrency, top-k): simulate it
   with that calibration (the mean of SEEDS seeded simulations, so the simulator's own sampling
   noise does not count as error), run it for real, and `mtpsim compare` the two.
Every real run executes its two policies side by side (one process pinned to each core), so
both see the same machine, in two rounds with the cores swapped: this machine's two vCPUs differ
by up to ~10 % in speed, which would otherwise read as a policy effect. The real figures are the
mean of the two rounds (per request: its timestamps averaged over the rounds; the tokens, and so
the acceptance counts, are the same in both), and the calibration fits the traces of both rounds.
4. Check: acceptance length error <= 3 %, output throughput error <= 10 %, median TPOT error
   <= 10 % (every policy), and the sign of the share-vs-fresh change wherever the real change is
   significant (bootstrap CI excludes 0, for acceptance it clears the placebo noise floor, and
   every round shows the change with the same sign).

Real runs are skipped when their results exist (run-real resumes), so a rerun only re-simulates.
Run: python benchmarks/heldout_validation.py [--weights PATH] [--out DIR] [--calibration FILE] [--only N..]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments" / "heldout"
HELD_OUT = ("k2-conc4", "k3-long-conc2", "k3-top128-conc16", "k4-top32-conc1")
LIMITS = {"spec_decode_acceptance_length": 3.0, "output_throughput": 10.0, "median_tpot_ms": 10.0}
SIGN_METRICS = ("spec_decode_acceptance_length", "median_tpot_ms")
POLICIES = ("fresh", "share")
SEEDS = 8
ROUNDS = 4  # default; --rounds


def mtpsim(*args: str, capture: bool = False) -> str:
    """Run one mtpsim command (argument list, no shell); stop on failure."""
    cmd = [sys.executable, "-m", "mtpsim", *args]
    print("$ mtpsim " + " ".join(args), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, text=True, stdout=subprocess.PIPE if capture else None)
    if proc.returncode != 0:
        sys.exit(f"mtpsim {args[0]} failed with exit code {proc.returncode}")
    return proc.stdout or ""


def _pin(cpu: int | None):
    return None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))


def side_by_side(cmds: list[list[str]], r: int) -> None:
    """Run the commands at once, the i-th pinned to core (i + r) mod 2 (round r swaps the cores);
    stop the run on a failure, and leave no child behind on an interrupt."""
    cpus: list[int | None] = sorted(os.sched_getaffinity(0))[:len(cmds)]
    if len(cpus) < len(cmds):
        cpus = [None] * len(cmds)
    procs = []
    for i, cmd in enumerate(cmds):
        cpu = cpus[(i + r) % len(cpus)]
        shown = ["mtpsim", *cmd[3:]] if cmd[1:3] == ["-m", "mtpsim"] else cmd[1:]
        print(f"$ {' '.join(shown)}   # round {r}, cpu {cpu}", flush=True)
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, preexec_fn=_pin(cpu)))
    try:
        codes = [p.wait() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait()
    if any(codes):
        sys.exit(f"{' '.join(cmds[0][1:4])} ... failed with exit codes {codes}")


def run_real(toml: str, out: Path, weights: list[str], rounds: int) -> str:
    """`rounds` rounds of both policies side by side (one `mtpsim run-real -p POLICY` each, pinned
    to one core, the cores swapped between rounds) into out/round-R/; their mean into out/.
    Returns the load average."""
    for r in range(rounds):
        side_by_side([[sys.executable, "-m", "mtpsim", "run-real", toml, "-p", policy, "--out",
                       str(out / f"round-{r}"), *weights] for policy in POLICIES], r)
    for policy in POLICIES:
        merge_rounds([out / f"round-{r}" / f"{policy}.json" for r in range(rounds)],
                     out / f"{policy}.json")
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _mean_metrics(runs: list) -> dict:
    """The runs' metrics averaged; counts (requests, tokens, drafts) rounded to whole numbers, as
    the result format holds them (their rates and the acceptance length stay exact means)."""
    from mtpsim.result_check import COUNTS

    metrics = {}
    for key, v in runs[0].metrics.items():
        vals = [r.metrics[key] for r in runs]
        if isinstance(v, int | float) and not isinstance(v, bool):
            metrics[key] = sum(vals) / len(runs)
            if key in COUNTS:
                metrics[key] = round(metrics[key])
        elif isinstance(v, list) and all(isinstance(x, int | float) for x in v):
            metrics[key] = [sum(xs) / len(runs) for xs in zip(*vals, strict=True)]
        else:
            metrics[key] = v
    return metrics


def merge_rounds(paths: list[Path], out: Path) -> None:
    """The rounds' mean: metrics averaged; each request's timestamps (and its inter-token
    latencies, when every round emitted the same number) averaged over the rounds."""
    from dataclasses import replace

    import numpy as np

    from mtpsim.result import Result, load_result

    runs = [load_result(p) for p in paths]
    by_id = [{q.request_id: q for q in (r.requests or [])} for r in runs]
    requests = []
    for q in runs[0].requests or []:
        same = [b[q.request_id] for b in by_id if q.request_id in b]
        itls = [np.repeat(x.itl_s, x.itl_count) for x in same]
        merged = replace(q, arrival_s=float(np.mean([x.arrival_s for x in same])),
                         first_token_s=float(np.mean([x.first_token_s for x in same])),
                         finish_s=float(np.mean([x.finish_s for x in same])))
        if len({i.size for i in itls}) == 1:
            mean_itl = np.mean(itls, axis=0)
            merged = replace(merged, itl_s=[float(x) for x in mean_itl], itl_count=[1] * mean_itl.size)
        requests.append(merged)
    phases = {p: float(np.mean([r.phases.get(p, 0.0) for r in runs])) for p in runs[0].phases}
    Result(runs[0].mode, runs[0].policy, _mean_metrics(runs), phases=phases, seed=runs[0].seed,
           experiment=runs[0].experiment, spec=runs[0].spec,
           extra=runs[0].extra.copy(mean_of_rounds=[str(p) for p in paths]),
           requests=requests).write(out)


def simulate_mean(toml: str, out: Path, cal_set: list[str]) -> None:
    """SEEDS seeded simulations; their metrics averaged into out/<policy>.json."""
    from mtpsim.records import RunExtra
    from mtpsim.result import Result, load_result

    for seed in range(SEEDS):
        mtpsim("simulate", toml, "--seed", str(seed), "--out", str(out / "seeds" / str(seed)), *cal_set,
               "--json", capture=True)
    for policy in POLICIES:
        runs = [load_result(out / "seeds" / str(seed) / f"{policy}.json") for seed in range(SEEDS)]
        Result("simulate", policy, _mean_metrics(runs), phases=runs[0].phases, seed=None,
               experiment=runs[0].experiment, spec=runs[0].spec,
               extra=RunExtra(mean_of_seeds=list(range(SEEDS)))).write(out / f"{policy}.json")


def machine() -> str:
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, 1 torch thread"


def round_deltas(real: Path, metric: str, rounds: int) -> list[float]:
    """share - fresh of `metric` in each round of a real run."""
    from mtpsim.result import load_result

    return [load_result(real / f"round-{r}" / "share.json").metrics[metric]
            - load_result(real / f"round-{r}" / "fresh.json").metrics[metric] for r in range(rounds)]


def check(name: str, report: dict, real: Path, rounds: int) -> tuple[list[dict], bool]:
    """Rows of (policy, metric, real, sim, error) and whether every criterion holds.

    A real share-vs-fresh change counts as significant when its request-level bootstrap CI
    excludes 0, it clears the placebo noise floor (acceptance), and every round shows it with
    the same sign: the bootstrap treats requests as independent, but all requests of a run share
    the machine's state, so a timing change must also replicate across the core-swapped rounds."""
    rows, ok = [], True
    for policy, fid in report["fidelity"].items():
        by_key = {r["metric"]: r for r in fid["rows"]}
        for key, limit in LIMITS.items():
            r = by_key[key]
            good = abs(r["error_pct"]) <= limit
            ok &= good
            rows.append({"config": name, "policy": policy, "metric": key, "real": r["real"],
                         "sim": r["sim"], "error_pct": r["error_pct"], "limit_pct": limit, "ok": good})
    real_ab = report["ab"].get("real:share", {})
    sim_ab = {r["metric"]: r for r in report["ab"].get("sim:share", {}).get("rows", [])}
    for r in real_ab.get("rows", []):
        if r["metric"] not in SIGN_METRICS or r["metric"] not in sim_ab:
            continue
        deltas = round_deltas(real, r["metric"], rounds)
        replicated = all(math.copysign(1, d) == math.copysign(1, r["delta"]) and d != 0 for d in deltas)
        significant = bool(r["significant"]) and r.get("within_noise") is not True and replicated
        sim_delta = sim_ab[r["metric"]]["delta"]
        good = (not significant) or (math.copysign(1, sim_delta) == math.copysign(1, r["delta"]))
        ok &= good
        rows.append({"config": name, "policy": "share-fresh", "metric": r["metric"], "real": r["delta"],
                     "sim": sim_delta, "ci": r["ci"], "rounds": deltas, "bootstrap_significant":
                     bool(r["significant"]), "significant": significant, "ok": good})
    return rows, ok


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # subprocess.run then kills the running mtpsim command


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="builtin", help="reference weights (default: the shipped ones)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "heldout")
    ap.add_argument("--calibration", type=Path, default=EXPERIMENTS / "calibration.json")
    ap.add_argument("--only", nargs="*", default=list(HELD_OUT), help="held-out configurations to run")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help=f"real rounds per configuration, cores swapped each round (default {ROUNDS})")
    args = ap.parse_args()
    out, calibration = args.out.resolve(), args.calibration.resolve()  # the spec resolves relative paths
    weights = ["--set", f"reference.weights={json.dumps(args.weights)}"]
    cal_dir = out / "calibrate"
    loads = {"calibrate": run_real(str(EXPERIMENTS / "calibrate.toml"), cal_dir, weights, args.rounds)}
    traces = [a for r in range(args.rounds) for p in POLICIES
              for a in ("--trace", str(cal_dir / f"round-{r}" / f"{p}.trace.jsonl"))]
    mtpsim("simulate", str(EXPERIMENTS / "calibrate.toml"), *traces,
           "--save-calibration", str(calibration), "--plot", str(cal_dir / "plots"),
           "--out", str(cal_dir / "sim"))
    cal_set = ["--set", f"calibration.file={json.dumps(str(calibration))}"]
    all_rows, all_ok = [], True
    for name in args.only:
        toml = str(EXPERIMENTS / f"{name}.toml")
        d = out / name
        simulate_mean(toml, d / "sim", cal_set)  # the prediction, made before the real run
        loads[name] = run_real(toml, d / "real", weights, args.rounds)
        report = json.loads(mtpsim("compare", str(d / "sim"), str(d / "real"), "--json",
                                   "--plot", str(d / "plots"), capture=True))
        rows, ok = check(name, report, d / "real", args.rounds)
        all_rows += rows
        all_ok &= ok
    print(f"\nmachine: {machine()}")
    for name, load in loads.items():
        print(f"  after {name}: {load}")
    print(f"{'config':<18} {'policy':<12} {'metric':<31} {'real':>10} {'sim':>10} {'error':>8}  verdict")
    for r in all_rows:
        if "error_pct" in r:
            verdict = f"{'ok' if r['ok'] else 'FAIL'} (<= {r['limit_pct']:.0f} %)"
            print(f"{r['config']:<18} {r['policy']:<12} {r['metric']:<31} {r['real']:>10.3f} "
                  f"{r['sim']:>10.3f} {r['error_pct']:>+7.2f}%  {verdict}")
        else:
            sig = "significant" if r["significant"] else "not significant"
            verdict = ("sign right" if r["ok"] else "SIGN WRONG") if r["significant"] else "no sign to check"
            rounds = ", ".join(f"{d:+.4f}" for d in r["rounds"])
            print(f"{r['config']:<18} {r['policy']:<12} {r['metric']:<31} {r['real']:>+10.4f} "
                  f"{r['sim']:>+10.4f} {'':>8}  real delta {sig}, CI [{r['ci'][0]:+.4f}, "
                  f"{r['ci'][1]:+.4f}], rounds {rounds}: {verdict}")
    from mtpsim.fileio import atomic_write_json

    atomic_write_json(out / "summary.json", {"machine": machine(), "weights": args.weights,
                                             "loads": loads, "all_ok": all_ok, "rows": all_rows})
    print(f"\nheld-out validation: {'PASS' if all_ok else 'FAIL'} ({len(args.only)} configurations; "
          f"summary in {out / 'summary.json'})")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
