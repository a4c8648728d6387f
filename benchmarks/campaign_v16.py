"""The v16 coverage campaign, pre-registered (docs/uncertainty.md, "The v16 campaign"): everything
below is fixed before its first real run (the commit is tagged v16-preregistered).

v15's procedure (benchmarks/campaign_common.py: interleaved slices and configurations, the clock
rule, the level-normalised fit, v13's predictions with their SHA-256 before scoring, v14's score and
v11's judge, v15's pooled penalty comparison), with exactly these changes:
 - 12 new test configurations (experiments/heldout/v16/), none run in v7-v15, seeds 1601-1612; the
   six inside the calibrated range serve 32-48 requests a policy (v15: 2-64, most 2-16), and three
   of the twelve are Poisson streams (v14, v15: none);
 - the calibration: v15's four kinds unchanged but for the seeds (slices 241-252);
 - the model, as declared in docs/uncertainty.md: the fit keeps v15's padded indexer keys, and the
   configurations name the zero penalty (acceptance.penalty = "none"), the winner of v14's and v15's
   registered penalty comparisons.

    python benchmarks/campaign_v16.py --out runs/v16 [--phase all|score] [--dry]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_common import Campaign, main  # noqa: E402

CAMPAIGN = Campaign(
    name="v16",
    exp=ROOT / "experiments" / "heldout" / "v16",
    # the registered order: slice i runs right before configs[i]; inside and outside alternate, so
    # that the clock rule, if it cuts the end, takes from both
    configs=("in-k4-ctx700-conc4", "out-k3-stream-ctx900", "in-k4-stream-ctx1100",
             "out-k5-stream-ctx1000", "in-k4-ctx1250-conc6", "out-k4-top48-ctx1300-conc4",
             "in-k4-ctx1650-conc2", "out-k2-top96-ctx700-conc8", "in-k4-ctx900-conc5",
             "out-k4-ctx2100-conc2", "in-k4-ctx1000-conc7", "out-k4-ctx600-conc12"),
    kinds=("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
           "calibrate-burst-ctx1700-conc2"),
    slice_seed=241,
    run_minutes=55, hard_minutes=62,
    # REGISTRATION: the planned first start + 55 and + 62 minutes
    last_start_utc=datetime(2026, 12, 3, 13, 10, tzinfo=UTC),
    hard_stop_utc=datetime(2026, 12, 3, 13, 17, tzinfo=UTC),
    penalty_configs="all",
    indexer_keys="padded",  # v15's declared change, kept
)

if __name__ == "__main__":
    main(CAMPAIGN, __doc__)
