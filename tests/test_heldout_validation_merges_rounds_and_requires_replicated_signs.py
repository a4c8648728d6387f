"""benchmarks/heldout_validation.py: the real figures are the mean of the core-swapped rounds
(per request: its timestamps and inter-token latencies averaged), and a real share-vs-fresh
change counts as significant only when every round shows its sign."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mtpsim.metrics import SpecDecodeCounters
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result, load_result

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hv():
    spec = importlib.util.spec_from_file_location("heldout_validation",
                                                  ROOT / "benchmarks" / "heldout_validation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _run(path: Path, policy: str, speed: float) -> None:
    """Two requests with 4 output tokens each; every time scaled by `speed`."""
    reqs = [RequestRecord(f"r{i}", 100, 4, 0.0, speed * (0.5 + i), speed * (0.8 + i),
                          [speed * 0.1], [3], 1, 3, 2, [1, 1, 0]) for i in range(2)]
    Result.from_requests(mode="reference", policy=policy, requests=reqs, duration_s=speed * 2.0,
                         counters=SpecDecodeCounters(2, 6, 4, [2, 2, 0])).write(path)


def test_rounds_are_averaged_per_metric_and_per_request(hv, tmp_path):
    for r, speed in enumerate((1.0, 1.2)):
        (tmp_path / f"round-{r}").mkdir()
        _run(tmp_path / f"round-{r}" / "fresh.json", "fresh", speed)
    hv.merge_rounds([tmp_path / f"round-{r}" / "fresh.json" for r in range(2)], tmp_path / "fresh.json")
    merged = load_result(tmp_path / "fresh.json")
    rounds = [load_result(tmp_path / f"round-{r}" / "fresh.json") for r in range(2)]
    for key in ("output_throughput", "median_tpot_ms", "spec_decode_acceptance_length"):
        assert merged.metrics[key] == pytest.approx(sum(x.metrics[key] for x in rounds) / 2)
    q = merged.requests[1]
    assert q.first_token_s == pytest.approx(1.5 * 1.1) and q.finish_s == pytest.approx(1.8 * 1.1)
    assert q.itl_s == pytest.approx([0.11] * 3) and q.itl_count == [1, 1, 1]


def test_a_significant_change_must_replicate_in_every_round(hv, tmp_path):
    # fresh is slower in round 0 only: the pooled delta's sign does not hold in round 1
    for r, (f, s) in enumerate(((1.2, 1.0), (1.0, 1.05))):
        (tmp_path / f"round-{r}").mkdir()
        _run(tmp_path / f"round-{r}" / "fresh.json", "fresh", f)
        _run(tmp_path / f"round-{r}" / "share.json", "share", s)
    row = {"metric": "median_tpot_ms", "delta": -0.5, "ci": [-0.9, -0.1], "significant": True}
    report = {"fidelity": {}, "ab": {"real:share": {"rows": [row]},
                                     "sim:share": {"rows": [{"metric": "median_tpot_ms", "delta": 0.2}]}}}
    rows, ok = hv.check("c", report, tmp_path, 2)
    assert ok and rows[0]["bootstrap_significant"] and not rows[0]["significant"]
    # the same deltas with the sim's sign wrong and both rounds agreeing: a failure
    _run(tmp_path / "round-1" / "share.json", "share", 0.9)
    rows, ok = hv.check("c", report, tmp_path, 2)
    assert rows[0]["significant"] and not ok
