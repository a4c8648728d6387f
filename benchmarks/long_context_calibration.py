"""A calibration that covers 0.3-7.2 K contexts: the held-out calibration run's traces plus a
long-prompt run (experiments/long-context/calibrate-long.toml), for benchmarks/long_context_e2e.py.

1. Real runs of calibrate-long.toml: both policies side by side, one pinned to each core, ROUNDS
   rounds with the cores swapped, CPU clock (heldout_validation's run_real); kept if present.
2. Fit acceptance, overlap and step cost to those traces and the short calibration's
   (`--short DIR`: DIR/round-R/POLICY.trace.jsonl, e.g. runs/heldout-v8/calibrate), with
   B bootstrap refits -> OUT/calibration-long.json.

Run: python benchmarks/long_context_calibration.py --short runs/heldout-v8/calibrate \
         --out runs/long-context-v2 [--rounds 2] [--bootstrap 16]
then: python benchmarks/long_context_e2e.py --calibration runs/long-context-v2/calibration-long.json \
         --out runs/long-context-v2 --set 'acceptance.penalty="kappa_lk"'
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from heldout_validation import POLICIES, mtpsim, run_real  # noqa: E402

TOML = ROOT / "experiments" / "long-context" / "calibrate-long.toml"


def traces_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("round-*/*.trace.jsonl"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", type=Path, required=True, help="the short calibration run's folder")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "long-context-v2")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bootstrap", type=int, default=16)
    ap.add_argument("--weights", default="builtin")
    a = ap.parse_args()
    short = traces_in(a.short)
    if not short:
        sys.exit(f"{a.short}: expected round-*/POLICY.trace.jsonl (a calibration run's traces)")
    long_dir = a.out / "calibrate-long"
    if not all((long_dir / f"round-{r}" / f"{p}.trace.jsonl").is_file()
               for r in range(a.rounds) for p in POLICIES):
        run_real(str(TOML), long_dir, ["--set", f'reference.weights="{a.weights}"'], a.rounds)
    cal = a.out / "calibration-long.json"
    mtpsim("simulate", str(TOML), *[x for t in (*short, *traces_in(long_dir)) for x in ("--trace", str(t))],
           "--save-calibration", str(cal), "--bootstrap", str(a.bootstrap), "--json", capture=True)
    print(f"calibration with {len(short)} short and {len(traces_in(long_dir))} long traces: {cal}")


if __name__ == "__main__":
    main()
