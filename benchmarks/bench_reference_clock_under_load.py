"""Reference-engine timings under competing load: wall clock vs `reference.clock = "cpu"`.

Runs experiments/heldout/k2-conc4.toml (fresh, 8 prompts) on each clock, first as the machine
is, then with N busy-loop processes competing for the cores (started here, stopped by pid).
Run: python benchmarks/bench_reference_clock_under_load.py [--weights PATH] [--burners 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(clock: str, out: Path, weights: str) -> tuple[float, float]:
    exp = ROOT / "experiments" / "heldout" / "k2-conc4.toml"
    cmd = [sys.executable, "-m", "mtpsim", "run-real", str(exp), "-p", "fresh", "--out", str(out),
           "--set", "workload.num_prompts=8", "--set", f"reference.clock={json.dumps(clock)}",
           "--set", f"reference.weights={json.dumps(weights)}"]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = json.loads((out / "fresh.json").read_text())
    return res["output_throughput"], res["median_tpot_ms"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="builtin")
    ap.add_argument("--burners", type=int, default=2)
    args = ap.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for load in ("as is", f"+{args.burners} busy loops"):
            burners = []
            if load != "as is":
                burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                           for _ in range(args.burners)]
            try:
                for clock in ("wall", "cpu"):
                    rows[(load, clock)] = run(clock, Path(tmp) / f"{len(rows)}", args.weights)
            finally:
                for b in burners:
                    b.terminate()
                    b.wait()
    print(f"{'load':<16} {'clock':<6} {'output tok/s':>13} {'median TPOT ms':>15}")
    for (load, clock), (tput, tpot) in rows.items():
        print(f"{load:<16} {clock:<6} {tput:>13.1f} {tpot:>15.1f}")
    for clock in ("wall", "cpu"):
        a, b = rows[("as is", clock)][0], rows[(f"+{args.burners} busy loops", clock)][0]
        print(f"{clock}: throughput under load {100 * (b / a - 1):+.1f} %")


if __name__ == "__main__":
    main()
