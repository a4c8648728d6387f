"""Power and time of the v20 campaign, computed before it (docs/uncertainty.md, "The v20 campaign"):
v16's method (benchmarks/campaign_v16_power.py) with its noise read from v11-v19's shipped runs and
its predictions made, paired as v20 registers them, from v19's calibration on v20's specs.

    python benchmarks/campaign_v20_power.py --out docs/data/heldout-v20-power [--draws 64]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_v16_power import power_main  # noqa: E402
from campaign_v20 import CAMPAIGN  # noqa: E402

if __name__ == "__main__":
    power_main(CAMPAIGN, "heldout-v19",
               ("heldout-v15", "heldout-v16", "heldout-v17", "heldout-v18", "heldout-v19"), __doc__)
