"""benchmarks/long_context_e2e.py: share-vs-fresh gains in % with request-level CIs, significant
only when every core-swapped round agrees; the must-show verdict (predicted within +-20 % of a
significant measured gain, or both within noise); the `before` runner writes the indexer keys."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mtpsim.metrics import SpecDecodeCounters
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.fixture(scope="module")
def lc():
    return _load("long_context_e2e")


def _run(path: Path, policy: str, tpot: float, n: int = 12) -> None:
    """n requests back to back (concurrency 1), 11 output tokens each, TTFT 1 s, TPOT `tpot`
    (+-5 % from request to request)."""
    reqs, t = [], 0.0
    for i in range(n):
        per = tpot * (1 + 0.05 * ((i % 3) - 1))
        first = t + 1.0
        end = first + 10 * per
        reqs.append(RequestRecord(f"r{i}", 100, 11, t, first, end, [per], [10], 5, 20, 10,
                                  [5, 3, 2, 0]))
        t = end
    path.parent.mkdir(parents=True, exist_ok=True)
    Result.from_requests(mode="reference", policy=policy, requests=reqs, duration_s=t,
                         counters=SpecDecodeCounters(5 * n, 20 * n, 10 * n, [5 * n, 3 * n, 2 * n, 0])
                         ).write(path)


def _rounds(tmp: Path, speeds: list[tuple[float, float]]) -> list[tuple[Path, Path]]:
    out = []
    for r, (f, s) in enumerate(speeds):
        _run(tmp / f"round-{r}" / "fresh.json", "fresh", f)
        _run(tmp / f"round-{r}" / "share.json", "share", s)
        out.append((tmp / f"round-{r}" / "fresh.json", tmp / f"round-{r}" / "share.json"))
    return out


def test_a_faster_share_is_a_significant_gain_in_percent(lc, tmp_path):
    rounds = _rounds(tmp_path, [(0.10, 0.08), (0.10, 0.08)])
    _run(tmp_path / "fresh.json", "fresh", 0.10)
    _run(tmp_path / "share.json", "share", 0.08)
    tpot = lc.gain(tmp_path / "fresh.json", tmp_path / "share.json", "median_tpot_ms", rounds)
    assert tpot["gain_pct"] == pytest.approx(-20.0, abs=0.01)
    assert tpot["ci"][0] < -20.0 < tpot["ci"][1] < 0 and tpot["significant"]
    thr = lc.gain(tmp_path / "fresh.json", tmp_path / "share.json", "output_throughput", rounds)
    # 11 tokens in 1 s + 10 TPOTs: (1 + 1.0) / (1 + 0.8) - 1
    assert thr["gain_pct"] == pytest.approx(100 * (2.0 / 1.8 - 1), rel=1e-3)
    assert thr["ci"][0] > 0 and thr["significant"]
    # paired by request id: each prompt's own spread cancels, so the CI closes on the gain
    dec = lc.paired_decode_gain(tmp_path / "fresh.json", tmp_path / "share.json")
    assert dec["gain_pct"] == pytest.approx(-20.0) and dec["ci"] == pytest.approx([-20.0, -20.0])


def test_a_gain_one_round_contradicts_is_not_significant(lc, tmp_path):
    rounds = _rounds(tmp_path, [(0.10, 0.08), (0.10, 0.105)])
    _run(tmp_path / "fresh.json", "fresh", 0.10)
    _run(tmp_path / "share.json", "share", 0.09)
    g = lc.gain(tmp_path / "fresh.json", tmp_path / "share.json", "median_tpot_ms", rounds)
    assert g["ci_excludes_0"] and not g["significant"]
    assert g["rounds"][0] < 0 < g["rounds"][1]


def test_the_verdict_follows_the_must_show(lc):
    sig = {"gain_pct": -10.0, "significant": True}
    assert lc.verdict(sig, {"median": -11.5, "lo": -20.0, "hi": -2.0})[0]
    ok, why = lc.verdict(sig, {"median": -1.0, "lo": -11.0, "hi": 6.0})
    # inside the interval is not enough: the median must be close
    assert not ok and "is 10 % of the measured gain" in why
    noise = {"gain_pct": 1.0, "significant": False}
    assert lc.verdict(noise, {"median": 0.5, "lo": -2.0, "hi": 3.0}) == (
        True, "ok: both within noise (cannot tell)")
    assert not lc.verdict(noise, {"median": 4.0, "lo": 1.0, "hi": 7.0})[0]
    wide = {"gain_pct": 1.0, "significant": False, "ci": [-2.0, 5.0]}
    ok, why = lc.verdict(wide, {"median": 3.0, "lo": 1.8, "hi": 4.4})
    assert not ok and why.endswith("inside the real 95 % CI (the run cannot resolve it)")
    ok, why = lc.verdict(wide, {"median": 6.0, "lo": 5.0, "hi": 7.0})
    assert not ok and why.endswith("outside the real 95 % CI")


def test_the_before_runner_writes_the_mtp_indexer_keys_at_reused_steps():
    from _reference_models import tiny_model

    mod = _load("run_real_eager_keys")
    model = mod._eager(lambda: tiny_model(vocab=256))()
    assert model.mtp.block.attention.eager_index_keys
    assert not tiny_model(vocab=256).mtp.block.attention.eager_index_keys


def test_a_resumed_summary_reports_the_load_of_the_real_run_not_of_the_rerun(lc, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    assert lc.run_load(real, False, "load average 1.90 2.00 2.10") == "load average 1.90 2.00 2.10"
    assert lc.run_load(real, True, "load average 0.10 0.20 0.30") == "load average 1.90 2.00 2.10"
    (real / "load.txt").unlink()
    assert lc.run_load(real, True, "load average 0.10 0.20 0.30").startswith(
        "load when the rounds ran not recorded")
    assert not lc.rounds_finished(real, 1)
    for p in ("fresh", "share"):
        (real / "round-0").mkdir(exist_ok=True)
        (real / "round-0" / f"{p}.json").write_text("{}")
    assert lc.rounds_finished(real, 1) and not lc.rounds_finished(real, 2)
