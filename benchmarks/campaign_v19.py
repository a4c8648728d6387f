"""The v19 coverage campaign, pre-registered (docs/uncertainty.md, "The v19 campaign"): everything
below is fixed before its first real run (the commit is tagged v19-preregistered).

v18's procedure (benchmarks/campaign_common.py: interleaved slices and configurations, the clock
rule, the level-normalised fit, paired predictions with their SHA-256 before scoring, v14's score
and v11's judge, v15's pooled penalty comparison), with exactly these changes:
 - the six configurations inside the calibrated range serve 96 requests a policy each (v18: 56-60),
   in 3-6 rounds of whole batches at concurrency 4-8, so that their acceptance-length intervals,
   whose width at v18's sizes was mostly the workload's own request-to-request spread, can meet the
   3 % half-width (v18 scored 3.43 %); the six outside ones are small (12-20 requests);
 - 12 new test configurations (experiments/heldout/v19/), none run in v7-v18, seeds 1901-1912; three
   of the twelve are Poisson streams (one inside), as v16-v18;
 - the calibration: v18's four kinds unchanged but for the seeds (slices 301-312);
 - the model: v18's declared one unchanged (`kappa_lk`, again the winner of v18's registered pooled
   penalty comparison; `acceptance.request_draw = "independent"`; the padded indexer keys; paired
   predictions);
 - the clock: 66 / 73 minutes (v17 and v18: 60 / 67): the larger inside configurations are
   predicted at 60.2 minutes (benchmarks/campaign_v19_power.py).

    python benchmarks/campaign_v19.py --out runs/v19 [--phase all|score] [--dry]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_common import Campaign, main  # noqa: E402

CAMPAIGN = Campaign(
    name="v19",
    exp=ROOT / "experiments" / "heldout" / "v19",
    # the registered order: slice i runs right before configs[i]; inside and outside alternate, so
    # that the clock rule, if it cuts the end, takes from both
    configs=("in-k4-ctx400-conc8", "out-k3-ctx900-conc4", "in-k4-stream-ctx700", "out-k5-stream-ctx600",
             "in-k4-ctx950-conc8", "out-k4-ctx2000-conc4", "in-k4-ctx550-conc6",
             "out-k6-top80-ctx700-conc3", "in-k4-ctx1150-conc8", "out-k4-stream-ctx1000-conc10",
             "in-k4-ctx850-conc6", "out-k4-top32-ctx800-conc6"),
    kinds=("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
           "calibrate-burst-ctx1700-conc2"),
    slice_seed=301,
    run_minutes=66, hard_minutes=73,
    # REGISTRATION: the planned first start (17:15 UTC) + 66 and + 73 minutes
    last_start_utc=datetime(2026, 12, 4, 18, 21, tzinfo=UTC),
    hard_stop_utc=datetime(2026, 12, 4, 18, 28, tzinfo=UTC),
    penalty_configs="all",
    indexer_keys="padded",  # v15's declared change, kept
    paired_predictions=True,  # v18's declared change, kept
)

if __name__ == "__main__":
    main(CAMPAIGN, __doc__)
