"""The text every reporting command prints, at 120 columns, against tests/data/golden_reports/.

`python scripts/golden_reports.py --write` captures it (done with the code before the tables moved
into mtpsim/report/); without --write it prints the names that differ and exits 1.
Lines that carry a wall time are dropped: they differ run to run. A printed number may differ
from the golden one by one unit in its last printed digit and nothing else may differ (`same`):
fits and sums round differently on CPUs with other SIMD paths (an Intel host prints kappa 3.95
where the AMD host that wrote the golden printed 3.96).
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden_reports"
ROUND = "docs/data/heldout-v10/out-k4-ctx2600-conc2/real/rounds/r03"
COMMANDS: dict[str, list[str]] = {
    "simulate": ["simulate", "experiments/pr47352.toml"],
    "simulate-uncertainty": ["simulate", "experiments/pr47352.toml", "--uncertainty", "8", "-j", "1"],
    "simulate-trace-fit": ["simulate", "experiments/reference-cpu.toml",
                           "--trace", "{traces}/fresh.trace.jsonl", "--trace", "{traces}/share.trace.jsonl"],
    "compare-rounds": ["compare", "docs/data/heldout-v10/out-k4-ctx2600-conc2/real"],
    "compare-sim-vs-real": ["compare", "docs/data/pr47352-sim", "docs/data/reference-cpu-oneshot"],
    "calibrate": ["calibrate", "experiments/pr47352.toml"],
    "sweep": ["sweep", "experiments/pr47352.toml", "--set", "workload.max_concurrency=4,8", "-j", "1"],
    "sweep-uncertainty": ["sweep", "experiments/pr47352.toml", "--set", "workload.max_concurrency=4,8",
                          "--uncertainty", "4", "-j", "1"],
    "advise": ["advise", "experiments/advise-deepseek-v3.2-b200.toml", "--draws", "2", "-j", "1",
               "--point-dir", "{traces}/advise"],
}
_NUMBER = re.compile(r"\d+(?:\.(\d+))?")
_WALL = re.compile(r"\d s wall|wall \d|in \d+(\.\d+)? ?s\b")


def capture(name: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        for p in ("fresh", "share"):  # the trace reader takes plain text
            Path(tmp, f"{p}.trace.jsonl").write_bytes(gzip.decompress((ROOT / ROUND / f"{p}.trace.jsonl.gz")
                                                                      .read_bytes()))
        return _run([a.replace("{traces}", tmp) for a in COMMANDS[name]]).replace(tmp, "<traces>")


def _run(args: list[str]) -> str:
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    out = subprocess.run([sys.executable, "-m", "mtpsim", *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    text = out.stdout + f"[exit {out.returncode}]\n"
    return "".join(line for line in text.splitlines(keepends=True) if not _WALL.search(line))


def same(got: str, golden: str) -> bool:
    """The same text, save printed numbers one unit apart in their last digit (same digits
    after the point), whatever else is identical: the words, the layout, the widths."""
    if got == golden:
        return True
    if _NUMBER.sub("#", got) != _NUMBER.sub("#", golden):
        return False
    for a, b in zip(_NUMBER.finditer(got), _NUMBER.finditer(golden), strict=True):
        decimals = len(a.group(1) or "")
        if decimals != len(b.group(1) or "") or abs(float(a[0]) - float(b[0])) > 1.5 * 10 ** -decimals:
            return False
    return True


def main(argv: list[str]) -> int:
    write = "--write" in argv
    names = [a for a in argv if not a.startswith("-")] or list(COMMANDS)
    bad = []
    for name in names:
        text = capture(name)
        path = GOLDEN / f"{name}.txt"
        if write:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not same(text, path.read_text()):
            bad.append(name)
    print("\n".join(bad) or "all equal")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
