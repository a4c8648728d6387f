"""The v17 coverage campaign, pre-registered (docs/uncertainty.md, "The v17 campaign"): everything
below is fixed before its first real run (the commit is tagged v17-preregistered).

v16's procedure (benchmarks/campaign_common.py: interleaved slices and configurations, the clock
rule, the level-normalised fit, v13's predictions with their SHA-256 before scoring, v14's score and
v11's judge, v15's pooled penalty comparison), with exactly these changes:
 - 12 new test configurations (experiments/heldout/v17/), none run in v7-v16, seeds 1701-1712; the
   six inside the calibrated range serve 48-64 requests a policy (v16: 32-48; the wider acceptance
   interval of the independent request draw needs more tokens for the same width), three of the
   twelve are Poisson streams (one inside), as v16;
 - the calibration: v16's four kinds unchanged but for the seeds (slices 261-272);
 - the model, as declared in docs/uncertainty.md: the fit keeps v15's padded indexer keys, and the
   configurations name `kappa_lk`, the winner of v16's registered pooled penalty comparison, and
   `acceptance.request_draw = "independent"` (§23: a workload's per-request acceptance shifts drawn
   independently, so the interval is one for what N requests measure);
 - the clock: 60 / 67 minutes (v16 55 / 62; the larger inside configurations).

    python benchmarks/campaign_v17.py --out runs/v17 [--phase all|score] [--dry]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_common import Campaign, main  # noqa: E402

CAMPAIGN = Campaign(
    name="v17",
    exp=ROOT / "experiments" / "heldout" / "v17",
    # the registered order: slice i runs right before configs[i]; inside and outside alternate, so
    # that the clock rule, if it cuts the end, takes from both
    configs=("in-k4-ctx800-conc3", "out-k3-ctx1000-conc4", "in-k4-stream-ctx900",
             "out-k4-top80-ctx900-conc6", "in-k4-ctx1100-conc5", "out-k2-stream-ctx800",
             "in-k4-ctx1500-conc4", "out-k4-ctx2400-conc2", "in-k4-ctx600-conc8",
             "out-k5-ctx700-conc6", "in-k4-ctx1350-conc2", "out-k4-stream-ctx1200-conc10"),
    kinds=("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
           "calibrate-burst-ctx1700-conc2"),
    slice_seed=261,
    run_minutes=60, hard_minutes=67,
    # REGISTRATION: the planned first start + 60 and + 67 minutes
    last_start_utc=datetime(2026, 12, 3, 16, 42, tzinfo=UTC),
    hard_stop_utc=datetime(2026, 12, 3, 16, 49, tzinfo=UTC),
    penalty_configs="all",
    indexer_keys="padded",  # v15's declared change, kept
)

if __name__ == "__main__":
    main(CAMPAIGN, __doc__)
