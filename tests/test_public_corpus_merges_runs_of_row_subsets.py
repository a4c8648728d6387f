"""`benchmarks/public_corpus.py --merge` scores the rows of several `--only` runs together (what a
loaded machine needs: each run short), the same as one run over them would, and refuses a row
scored twice or runs of different draws with one line and exit 2."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("public_corpus", ROOT / "benchmarks" / "public_corpus.py")
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)
ROWS, SPLIT = pc.load()
PAIR = ("gpustack-h200-vllm-tp8-sharegpt", "gpustack-h200-vllm-tp8-mtp1-sharegpt")


def fake_row(rid: str, median: float) -> dict:
    measured = next(r for r in ROWS if r["id"] == rid)["measured"]["output_throughput"]
    return {"id": rid, "policy": "fresh", "wall_s": 1.0,
            "figures": {"output_throughput": pc.score(measured, 0.5 * median, median, 1.5 * median)}}


def write(d: Path, rows: list[dict], draws: int = 32) -> Path:
    d.mkdir(parents=True)
    (d / "public_corpus.json").write_text(json.dumps(
        {"draws": draws, "summary": [], "k_pairs": [], "refused": {}, "rows": rows, "split": {}}))
    return d


def test_merged_runs_score_like_one_run(tmp_path):
    a = write(tmp_path / "a", [fake_row(PAIR[0], 2000.0)])
    b = write(tmp_path / "b", [fake_row(PAIR[1], 2600.0)])
    assert pc.main(["--merge", str(a), str(b), "--out", str(tmp_path / "all")]) == 0
    got = json.loads((tmp_path / "all" / "public_corpus.json").read_text())
    by_id = {r["id"]: r for r in ROWS}
    both = [fake_row(PAIR[0], 2000.0), fake_row(PAIR[1], 2600.0)]
    assert got["summary"] == pc.aggregate(both, by_id, SPLIT)
    (pair,) = got["k_pairs"]
    assert pair["predicted_ratio"] == 1.3  # 2,600 / 2,000, with MTP over without
    assert [r["id"] for r in got["rows"]] == list(PAIR)


def test_a_row_twice_or_mixed_draws_is_refused(tmp_path, capsys):
    a = write(tmp_path / "a", [fake_row(PAIR[0], 2000.0)])
    b = write(tmp_path / "b", [fake_row(PAIR[0], 2100.0)])
    c = write(tmp_path / "c", [fake_row(PAIR[1], 2600.0)], draws=64)
    assert pc.main(["--merge", str(a), str(b)]) == 2
    assert pc.main(["--merge", str(a), str(c)]) == 2
    assert pc.main(["--merge", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "twice" in err and "public_corpus.json" in err and "Traceback" not in err


def test_only_with_an_unknown_or_inexpressible_id_is_one_line_and_exit_2(capsys, tmp_path):
    """A typo in --only scored an empty corpus without a word; now it names the id first."""
    assert pc.main(["--only", PAIR[0], "gpustack-no-such-row", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--only: gpustack-no-such-row" in err[0] and "unknown id" in err[0]
    assert not (tmp_path / "x").exists()
    closed = [r["id"] for r in ROWS if not r["expressible"]]
    if closed:
        assert pc.main(["--only", closed[0]]) == 2
        assert "not expressible" in capsys.readouterr().err


def test_a_merged_score_names_the_code_of_every_run_and_its_own(tmp_path):
    """A shipped score JSON must say which commit made it: the merge records each input run's
    `code` (None where an older run had none) and the checkout that merged them."""
    a = write(tmp_path / "a", [fake_row(PAIR[0], 2000.0)])
    b = write(tmp_path / "b", [fake_row(PAIR[1], 2600.0)])
    data = json.loads((a / "public_corpus.json").read_text())
    data["code"] = {"commit": "0" * 40, "dirty": False}
    (a / "public_corpus.json").write_text(json.dumps(data))
    assert pc.main(["--merge", str(a), str(b), "--out", str(tmp_path / "all")]) == 0
    got = json.loads((tmp_path / "all" / "public_corpus.json").read_text())
    assert got["merged"] == [{"dir": "a", "commit": "0" * 40, "dirty": False},
                             {"dir": "b", "commit": None, "dirty": None}]
    assert len(got["code"]["commit"]) == 40 and isinstance(got["code"]["dirty"], bool)
    assert got["code"] == pc.provenance()
