"""Power and time of the v16 campaign, computed before it (docs/uncertainty.md, "The v16 campaign"):
v15's method (benchmarks/campaign_v15_power.py) with its noise read from v11-v15's shipped runs and
its predictions made from v15's calibration (the padded-keys fit v16 keeps), on v16's specs.

    python benchmarks/campaign_v16_power.py --out docs/data/heldout-v16-power [--draws 64]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v11 as v11  # noqa: E402
import campaign_v15_power as p15  # noqa: E402
from campaign_common import Campaign  # noqa: E402
from campaign_v10 import METRICS  # noqa: E402
from campaign_v16 import CAMPAIGN  # noqa: E402


def predictions(c: Campaign, previous: str, draws: int, keep: Path) -> dict:
    """C's configurations by the registered method, from the PREVIOUS campaign's calibration (its
    shipped folder's name), kept in KEEP/predictions."""
    v11.DRAWS = draws
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(p15.DATA / previous / "calibration-bootstrap.json", keep / "calibration-bootstrap.json")
    try:
        return {n: v11.predict(keep, n, c.exp, c.paired_predictions) for n in c.configs}
    finally:
        (keep / "calibration-bootstrap.json").unlink()  # the previous campaign's, shipped there already


def power_main(c: Campaign, previous: str, noise_from: tuple[str, ...], doc: str) -> None:
    """The power and time of campaign C, from PREVIOUS's fit, with noise read from the shipped
    campaigns NOISE_FROM added to v15's list; written to --out/power.json and printed."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=p15.DATA / f"heldout-{c.name}-power")
    ap.add_argument("--draws", type=int, default=64)
    args = ap.parse_args()
    from mtpsim.fileio import atomic_write_json

    p15.SHIPPED = (*p15.SHIPPED, *noise_from)
    noise, walls = p15.measured_noise(), p15.wall_model()
    preds = predictions(c, previous, args.draws, args.out)
    rows = [p15.expected(n, preds[n], noise, walls, c.exp) for n in c.configs]
    tests_min = sum(r["minutes"] for r in rows)
    n_testable = sum(d["testable_expected"] for r in rows for d in r["deltas"].values())
    prev = previous.removeprefix("heldout-")
    res = {"command": f"python benchmarks/campaign_{c.name}_power.py --draws {args.draws}",
           "calibration": f"docs/data/{previous}/calibration-bootstrap.json ({prev}'s fit)",
           "noise_from": list(p15.SHIPPED), "noise": noise, "wall_model": walls, "configs": rows,
           "minutes": {"tests": tests_min, "slices_v14": walls["v14_slices_min"],
                       "total": tests_min + walls["v14_slices_min"]},
           "testable_expected": n_testable, "deltas": 3 * len(rows),
           **({"paired_predictions": True} if c.paired_predictions else {})}
    atomic_write_json(args.out / "power.json", res)
    for r in rows:
        cells = "  ".join(f"{p15._short(m)} {d['predicted_effect']:+.3g} r {d['power_ratio']['median']:.2f}"
                          f"{'*' if d['testable_expected'] else ' '}"
                          for m, d in r["deltas"].items() if d["expected_se"])
        print(f"{r['config']:28s} n {r['requests']:3d} R {r['rounds']:2d} {r['minutes']:4.1f} min  {cells}")
    for m in METRICS:
        need = [r["deltas"][m]["needed"] for r in rows if r["deltas"][m]["needed"]]
        if need:
            print(f"{p15._short(m)}: SE = effect / 2 needs {min(need):.0f}-{max(need):.0f} "
                  f"(median {statistics.median(need):.0f}) "
                  f"{'requests a policy' if m == p15.AL else 'rounds'}")
    print(f"tests {tests_min:.1f} min + slices {walls['v14_slices_min']:.1f} min (v14's) = "
          f"{res['minutes']['total']:.1f} min; expected testable: {n_testable} of {res['deltas']}")


if __name__ == "__main__":
    power_main(CAMPAIGN, "heldout-v15", ("heldout-v15",), __doc__)
