"""The v20 coverage campaign, pre-registered (docs/uncertainty.md, "The v20 campaign"): everything
below is fixed before its first real run (the commit is tagged v20-preregistered).

A replication of v19 (the first campaign to pass every criterion): v19's procedure, model and sizes
(benchmarks/campaign_common.py; paired predictions, `kappa_lk`, independent request draws, padded
keys; 96 requests a policy inside the range), with exactly these changes:
 - 12 new test configurations (experiments/heldout/v20/), none run in v7-v19, seeds 2001-2012;
   three Poisson streams (one inside); two of the outside ones at prompts beyond the calibrated
   range (2,200 and 2,400 tokens, 64 requests in 16 rounds each) for the hypothesis §31 states
   before this campaign: there `share`'s median TPOT saving exceeds the paired prediction's median;
 - the calibration: v19's four kinds unchanged but for the seeds (slices 321-332);
 - the clock: v19's 66 / 73 minutes.

    python benchmarks/campaign_v20.py --out runs/v20 [--phase all|score] [--dry]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_common import Campaign, main  # noqa: E402

CAMPAIGN = Campaign(
    name="v20",
    exp=ROOT / "experiments" / "heldout" / "v20",
    # the registered order: slice i runs right before configs[i]; inside and outside alternate, so
    # that the clock rule, if it cuts the end, takes from both
    configs=("in-k4-ctx450-conc8", "out-k4-ctx2200-conc4", "in-k4-stream-ctx1200", "out-k2-stream-ctx1000",
             "in-k4-ctx1050-conc8", "out-k5-top48-ctx900-conc4", "in-k4-ctx650-conc6", "out-k4-ctx2400-conc4",
             "in-k4-ctx1300-conc8", "out-k4-stream-ctx800-conc12", "in-k4-ctx750-conc6",
             "out-k3-top96-ctx600-conc6"),
    kinds=("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
           "calibrate-burst-ctx1700-conc2"),
    slice_seed=321,
    run_minutes=66, hard_minutes=73,
    # REGISTRATION: the planned first start (17:37 UTC) + 66 and + 73 minutes
    last_start_utc=datetime(2026, 12, 4, 18, 43, tzinfo=UTC),
    hard_stop_utc=datetime(2026, 12, 4, 18, 50, tzinfo=UTC),
    penalty_configs="all",
    indexer_keys="padded",  # v15's declared change, kept
    paired_predictions=True,  # v18's declared change, kept
)

if __name__ == "__main__":
    main(CAMPAIGN, __doc__)
