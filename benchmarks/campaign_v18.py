"""The v18 coverage campaign, pre-registered (docs/uncertainty.md, "The v18 campaign"): everything
below is fixed before its first real run (the commit is tagged v18-preregistered).

v17's procedure (benchmarks/campaign_common.py: interleaved slices and configurations, the clock
rule, the level-normalised fit, v13's predictions with their SHA-256 before scoring, v14's score and
v11's judge, v15's pooled penalty comparison), with exactly these changes:
 - the predictions are PAIRED (`uncertainty.paired = true`, mtpsim's default; v11-v17 registered
   unpaired): both policies of a draw are simulated on the draw's seed, as every real round serves
   the same prompts and per-request seeds to both policies (mtpsim.rounds), so a predicted
   share - fresh delta is the model's effect on one workload, not the difference of two workloads'
   draws (v17 failed its delta criterion with unpaired intervals: §24; §25 has the development on
   seen v15-v17 data that led here);
 - 12 new test configurations (experiments/heldout/v18/), none run in v7-v17, seeds 1801-1812; the
   six inside the calibrated range serve 48-60 requests a policy, three of the twelve are Poisson
   streams (one inside), as v16 and v17;
 - the calibration: v17's four kinds unchanged but for the seeds (slices 281-292);
 - the model: v17's declared one unchanged (`kappa_lk`, again the winner of v17's registered
   pooled penalty comparison; `acceptance.request_draw = "independent"`; the padded indexer keys);
 - the clock: 60 / 67 minutes (v17's).

    python benchmarks/campaign_v18.py --out runs/v18 [--phase all|score] [--dry]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_common import Campaign, main  # noqa: E402

CAMPAIGN = Campaign(
    name="v18",
    exp=ROOT / "experiments" / "heldout" / "v18",
    # the registered order: slice i runs right before configs[i]; inside and outside alternate, so
    # that the clock rule, if it cuts the end, takes from both
    configs=("in-k4-ctx750-conc4", "out-k6-ctx500-conc2", "in-k4-stream-ctx1050",
             "out-k4-top48-ctx1000-conc4", "in-k4-ctx1200-conc6", "out-k3-stream-ctx700",
             "in-k4-ctx450-conc2", "out-k4-ctx2100-conc3", "in-k4-ctx1700-conc3",
             "out-k5-ctx1100-conc1", "in-k4-ctx950-conc7", "out-k4-stream-ctx900-conc12"),
    kinds=("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
           "calibrate-burst-ctx1700-conc2"),
    slice_seed=281,
    run_minutes=60, hard_minutes=67,
    # REGISTRATION: the planned first start + 60 and + 67 minutes
    last_start_utc=datetime(2026, 12, 3, 18, 50, tzinfo=UTC),
    hard_stop_utc=datetime(2026, 12, 3, 18, 57, tzinfo=UTC),
    penalty_configs="all",
    indexer_keys="padded",  # v15's declared change, kept
    paired_predictions=True,  # v18's declared change
)

if __name__ == "__main__":
    main(CAMPAIGN, __doc__)
