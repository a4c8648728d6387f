"""vLLM's ITL statistics computed from run-length ITLs (the simulator books one run per request
and stretch of equal steps) equal numpy's statistics of the expanded list."""

import numpy as np
import pytest

from mtpsim.metrics import _stats, serving_metrics
from mtpsim.request_record import RequestRecord


@pytest.mark.parametrize("seed", range(20))
def test_runs_give_the_statistics_of_the_expanded_list(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    values = rng.choice(rng.random(6), n)  # ties across runs, as equal step times give
    counts = rng.integers(0, 7, n)
    counts[0] = max(counts[0], 1)
    reqs = [RequestRecord(request_id="a", input_len=10, output_len=2 + int(counts.sum()),
                          arrival_s=0.0, first_token_s=0.1, finish_s=9.0,
                          itl_s=values.tolist(), itl_count=counts.tolist())]
    got = serving_metrics(reqs, 9.0)
    want: dict[str, float] = {}
    _stats("itl", np.repeat(values, counts), want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_one_itl_per_entry_takes_numpys_own_path():
    itl = [0.3, 0.1, 0.2, 0.1]
    reqs = [RequestRecord(request_id="a", input_len=10, output_len=5, arrival_s=0.0,
                          first_token_s=0.1, finish_s=1.0, itl_s=itl, itl_count=[1] * 4)]
    got = serving_metrics(reqs, 1.0)
    assert got["p90_itl_ms"] == np.percentile(np.array(itl) * 1000.0, 90)
    assert got["median_itl_ms"] == np.median(np.array(itl) * 1000.0)
