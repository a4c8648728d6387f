"""Power and time of the v17 campaign, computed before it (docs/uncertainty.md, "The v17 campaign"):
v16's method (benchmarks/campaign_v16_power.py) with its noise read from v11-v16's shipped runs and
its predictions made from v16's calibration (the padded-keys fit v17 keeps), on v17's specs.

    python benchmarks/campaign_v17_power.py --out docs/data/heldout-v17-power [--draws 64]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_v16_power import power_main  # noqa: E402
from campaign_v17 import CAMPAIGN  # noqa: E402

if __name__ == "__main__":
    power_main(CAMPAIGN, "heldout-v16", ("heldout-v15", "heldout-v16"), __doc__)
