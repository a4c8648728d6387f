"""The v15 coverage campaign, pre-registered (docs/uncertainty.md, "The v15 campaign"): everything
below is fixed before its first real run (the commit is tagged v15-preregistered).

v14's procedure (benchmarks/campaign_common.py: interleaved slices and configurations, the clock
rule, the level-normalised fit, v13's predictions with their SHA-256 before scoring, v14's score and
v11's judge), with exactly these changes:
 - 12 new test configurations (experiments/heldout/v15/), none run in v7-v14, seeds 1501-1512; three
   of them (conc 1, one request a round, 48-64 rounds) sized by power so that some share - fresh
   deltas can be testable (benchmarks/campaign_v15_power.py, docs/data/heldout-v15-power/);
 - the calibration: v14's four kinds unchanged but for the seeds (slices 221-232);
 - the penalty comparison: v11's rule on the `share` traces of ALL the configurations that ran,
   pooled (v11-v14: the inside ones), each event priced at its own trace's k.

    python benchmarks/campaign_v15.py --out runs/v15 [--phase all|score] [--dry]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_common import Campaign, main  # noqa: E402

CAMPAIGN = Campaign(
    name="v15",
    exp=ROOT / "experiments" / "heldout" / "v15",
    # the registered order: slice i runs right before configs[i]; inside and outside alternate; the
    # three power-sized configurations come early (0, 1, 5), where the clock rule cannot reach them
    configs=("in-k4-ctx350-conc1", "out-k6-top32-ctx300-conc1", "in-k4-ctx950-conc4",
             "out-k3-ctx1000-conc2", "in-k4-ctx1300-conc6", "out-k5-top32-ctx300-conc1",
             "in-k4-ctx1550-conc3", "out-k2-ctx500-conc6", "in-k4-mixed-conc2",
             "out-k4-ctx2600-conc1", "in-k4-ctx750-conc8", "out-k4-ctx400-conc16"),
    kinds=("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
           "calibrate-burst-ctx1700-conc2"),
    slice_seed=221,
    run_minutes=45, hard_minutes=52,
    # REGISTRATION: the coordinator sets these to the planned first start + 45 and + 52 minutes
    last_start_utc=datetime(2026, 12, 3, 10, 35, tzinfo=UTC),
    hard_stop_utc=datetime(2026, 12, 3, 10, 42, tzinfo=UTC),
    penalty_configs="all",
    # REGISTRATION: the declared model change, if any: "padded" tests §19's option; "own" is v14's fit
    indexer_keys="padded",
)

if __name__ == "__main__":
    main(CAMPAIGN, __doc__)
