"""Time of the calibration fit (`mtpsim.calibration.fit.fit_traces`) on the synthetic traces the
fit's recovery test uses (two policies x 160 requests, tests/_synthetic_traces.py): wall and this
process's CPU seconds per fit, each repeat in turn. The fit's speed is checked here, not by a
timed test (a loaded 2-core machine stretches wall time by 2-5x).

    python benchmarks/bench_trace_fit.py [--repeat 3] [--requests 160]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic traces with known parameters

from _synthetic_traces import make_trace  # noqa: E402

from mtpsim.calibration.fit import fit_traces  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--requests", type=int, default=160, help="requests per policy's trace")
    args = ap.parse_args()
    traces = [make_trace("fresh", 1, n_requests=args.requests),
              make_trace("share", 2, n_requests=args.requests)]
    walls, cpus = [], []
    for _ in range(args.repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fit_traces(traces, ["fresh.trace.jsonl", "share.trace.jsonl"])
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    print(f"fit_traces, 2 x {args.requests} requests, {args.repeat} repeats: "
          f"wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}), "
          f"CPU median {statistics.median(cpus):.2f} s (min {min(cpus):.2f})")


if __name__ == "__main__":
    main()
