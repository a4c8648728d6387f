"""`compare POLICY=PATH` labels a file that names no policy (a vLLM bench JSON). A label that
contradicts the file's own policy flipped the A/B without a word (exit 0); an unlabelled file that
names no policy was named after its file and the error then blamed --baseline. Both are one line
naming the file now, as is a result whose policy is no policy mtpsim knows."""

import json

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.runs.simulate import simulate

BENCH_KEYS = ("duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput",
              "output_throughput", "total_token_throughput", "mean_ttft_ms", "median_ttft_ms",
              "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms",
              "median_itl_ms", "p99_itl_ms")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    simulate("experiments/pr47352.toml", ["workload.num_prompts=16"], records=False).write(out)
    for policy in ("fresh", "share"):
        full = json.loads((out / f"{policy}.json").read_text())
        bench = {k: full[k] for k in BENCH_KEYS if k in full}
        (out / f"bench_{policy}.json").write_text(json.dumps(bench))
    return out


def _compare(*args):
    return CliRunner().invoke(app, ["compare", *map(str, args)])


def test_a_label_against_the_files_own_policy_is_refused(results):
    r = _compare(f"share={results / 'fresh.json'}", f"fresh={results / 'share.json'}")
    assert r.exit_code == 2
    assert "fresh.json: policy: labelled share= but the file is a fresh result" in r.output
    assert _compare(f"fresh={results / 'fresh.json'}", results / "share.json").exit_code == 0


def test_an_unlabelled_bench_json_is_asked_for_a_label(results):
    r = _compare(results / "bench_fresh.json", results / "bench_share.json")
    assert r.exit_code == 2 and "--baseline" not in r.output
    assert "bench_fresh.json: policy: expected a result that names its policy" in r.output
    ok = _compare(f"fresh={results / 'bench_fresh.json'}", f"share={results / 'bench_share.json'}")
    assert ok.exit_code == 0, ok.output


def test_a_result_of_an_unknown_policy_is_refused(results, tmp_path):
    full = json.loads((results / "fresh.json").read_text())
    full["policy"] = "zzz"
    (tmp_path / "odd.json").write_text(json.dumps(full))
    r = _compare(tmp_path / "odd.json", results / "share.json")
    assert r.exit_code == 2 and "odd.json: policy: expected one of fresh" in r.output
