"""The bad-input contract, fuzzed (Hypothesis): specs, `--set` strings, traces and result files
mutated from valid ones go through the commands in-process (Typer's CliRunner), and every case
ends in exit 0 with finite JSON or exit 2 with one `error:` line: never a traceback, another exit
code, a hang (pytest-timeout) or NaN. Each run uses a fresh seed, printed with its case count;
replay a failure with MTPSIM_FUZZ_SEED=<seed>."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _fuzz import (
    SEED,
    SPEC_KEYS,
    VALUES,
    assert_contract,
    corrupt_text,
    fuzz_settings,
    json_text,
    mutate,
    mutate_number,
    plausible,
    record,
    text,
    to_toml,
    toml_value,
)
from _synthetic_traces import make_trace
from hypothesis import given, seed
from hypothesis import strategies as st
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.errors import UserError
from mtpsim.spec import load_experiment
from mtpsim.sweep import build_points
from mtpsim.trace import read_trace

BASE_SPEC = {
    "seed": 1, "policies": ["fresh", "share"], "description": "fuzz base",
    "engine": {"tp": 8, "max_num_seqs": 8},
    "speculative": {"num_speculative_tokens": 3},
    "workload": {"num_prompts": 4, "input_len": 256, "output_len": 24, "max_concurrency": 4},
    "acceptance": {"per_position": [0.8, 0.6, 0.4], "request_sigma": 0.2},
    "calibration": {"overhead_ms": 1.0,
                    "measured": {"fresh": {"output_throughput": 900.0, "median_tpot_ms": 20.0}}},
}
MAX_TOKENS = 20_000  # a valid mutant that asks for more is validated but not simulated
ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def work() -> Path:
    d = Path(tempfile.mkdtemp(prefix="mtpsim-fuzz-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _run(args: list[str]) -> object:
    return CliRunner().invoke(app, args)


@pytest.fixture
def report(capsys):
    """Print past pytest's capture, so every CI log shows how much each run fuzzed."""

    def write(name: str, outcomes: dict[str, int]) -> None:
        with capsys.disabled():
            print(f"\nfuzz {name}: {sum(outcomes.values())} generated cases "
                  f"({outcomes['accepted']} accepted, {outcomes['refused']} refused in one line), "
                  f"seed {SEED} (replay: MTPSIM_FUZZ_SEED={SEED})")

    return write


def _fuzz(report, name: str, check, max_examples: int) -> None:
    """Run the Hypothesis test `check`, print the case count; on failure, the seed."""
    outcomes = {"accepted": 0, "refused": 0}

    @seed(SEED)
    @fuzz_settings(max_examples)
    @given(st.data())
    def test(data):
        outcomes["refused" if check(data) is None else "accepted"] += 1

    broken = 0
    try:
        test()
    except BaseException:
        broken = 1  # Hypothesis stops at the first (shrunk) failing case
        raise
    finally:
        report(name, outcomes)
        record(name, sum(outcomes.values()), broken)


def _small_enough(path: Path, sets: list[str]) -> bool:
    try:
        exp = load_experiment(path, sets)
    except UserError:
        return True  # fails fast in the command too
    w = exp.workload
    return w.num_prompts * (w.output_len + w.input_len / 64) <= MAX_TOKENS


def _resolved(work: Path) -> dict[str, object]:
    """Every spec key's value in the base spec (presets and defaults resolved)."""
    path = work / "resolved.toml"
    path.write_text(to_toml(BASE_SPEC))
    d = load_experiment(path).to_dict()
    flat = {k: d[k] for k in ("seed", "policies", "description")}
    flat.update({f"{s}.{k}": v for s, t in d.items() if isinstance(t, dict) for k, v in t.items()})
    return flat


def _key(hostile: bool) -> st.SearchStrategy:
    return st.sampled_from(SPEC_KEYS) | text(12, min_size=1) if hostile else st.sampled_from(SPEC_KEYS)


def _value_for(current: dict[str, object], key: str, hostile: bool) -> st.SearchStrategy:
    """A hostile value, or one near the key's valid value (so that mutants reach the simulator)."""
    return VALUES if hostile or key not in current else plausible(current[key])


def _validate_only(path: Path, sets: list[str]) -> object:
    """A valid mutant too big to simulate here: validation and the memory check, in-process."""
    from mtpsim.models.memory import check_fits

    try:
        check_fits(load_experiment(path, sets))
    except UserError as e:
        assert "\n" not in e.message()
        return None
    return True


def test_the_base_inputs_are_valid(work):
    """Else every mutant would be refused and the fuzzer would test nothing."""
    path = work / "valid.toml"
    path.write_text(to_toml(BASE_SPEC))
    assert assert_contract(_run(["simulate", str(path), "--json"]), "base") is not None


@pytest.mark.timeout(300)
def test_fuzzed_specs(work, report):
    path = work / "spec.toml"
    current = _resolved(work)

    def check(data):
        raw = json.loads(json.dumps(BASE_SPEC))
        hostile = data.draw(st.integers(0, 2)) == 0  # else plausible: mutants reach the simulator
        for _ in range(data.draw(st.integers(1, 2))):
            key = data.draw(_key(hostile))
            section, _, field = key.partition(".")
            value = data.draw(_value_for(current, key, hostile))
            if field and isinstance(raw.get(section, {}), dict):
                raw.setdefault(section, {})[field] = value
            else:
                raw[section] = value
        spec = to_toml(raw)
        if hostile and data.draw(st.booleans()):
            spec = corrupt_text(spec, data.draw)
        path.write_text(spec, encoding="utf-8")
        if _small_enough(path, []):
            return assert_contract(_run(["simulate", str(path), "--json"]), spec)
        return _validate_only(path, [])

    _fuzz(report, "specs", check, 40)


@pytest.mark.timeout(300)
def test_fuzzed_set_strings(work, report):
    path = work / "base.toml"
    path.write_text(to_toml(BASE_SPEC))
    current = _resolved(work)

    def check(data):
        hostile = data.draw(st.integers(0, 2)) == 0
        sets = []
        for _ in range(data.draw(st.integers(1, 2))):
            key = data.draw(_key(hostile))
            if not hostile or data.draw(st.booleans()):
                value = toml_value(data.draw(_value_for(current, key, hostile)))
            else:
                value = data.draw(text(16))
            sep = data.draw(st.sampled_from(["=", " = ", ""])) if hostile else "="
            sets.append(key + sep + value)
        try:  # the strings as sweep axes: split on commas, every point validated
            build_points(path, sets)
        except UserError as e:
            assert "\n" not in e.message()
        if _small_enough(path, sets):
            return assert_contract(_run(["simulate", str(path), "--json",
                                         *[a for s in sets for a in ("--set", s)]]), repr(sets))
        return _validate_only(path, sets)

    _fuzz(report, "--set strings", check, 40)


def _trace_lines(work: Path) -> list[dict]:
    p = work / "share.base.jsonl"
    make_trace("share", 3, n_requests=6).write(p)
    return [json.loads(line) for line in p.read_text().splitlines()]


@pytest.mark.timeout(300)
def test_fuzzed_traces(work, report):
    base = _trace_lines(work)
    path = work / "share.trace.jsonl"

    def check(data):
        lines = list(base)
        i = data.draw(st.integers(0, min(len(lines) - 1, 6)))
        lines[i] = mutate(lines[i], data.draw)
        body = "\n".join(json_text(x) for x in lines) + "\n"
        if data.draw(st.integers(0, 4)) == 0:
            body = corrupt_text(body, data.draw)
        path.write_text(body, encoding="utf-8")
        try:
            tr = read_trace(path)
        except UserError as e:
            assert "\n" not in e.message()
            return None
        k = tr.num_speculative_tokens
        for s in tr.steps:
            assert s.num_reqs == len(s.requests)
            for r in s.requests:
                assert 0 <= sum(r.accepted) <= r.drafted <= k and r.context_len >= 1
                assert all(0 <= o <= 1 for o in r.overlap) and len(r.overlap) < k
        assert all(o is None or 0 <= o <= 1 for o in tr.mean_overlap())
        return tr

    _fuzz(report, "traces", check, 80)


@pytest.mark.timeout(300)
def test_fuzzed_traces_through_the_fit(work, report):
    """Traces the reader accepts must also fit (or be refused in one line), never crash."""
    base = _trace_lines(work)
    fresh = work / "fresh.trace.jsonl"
    make_trace("fresh", 4, n_requests=6).write(fresh)
    spec = work / "fit-base.toml"
    spec.write_text(to_toml(BASE_SPEC))
    path = work / "share.fit.jsonl"

    def check(data):
        lines = list(base)
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(1, len(lines) - 1))
            lines[i] = mutate_number(lines[i], data.draw)
        path.write_text("\n".join(json_text(x) for x in lines) + "\n")
        return assert_contract(_run(["simulate", str(spec), "--trace", str(fresh), "--trace",
                                     str(path), "--json"]), "trace fit")

    _fuzz(report, "traces through the fit", check, 6)


@pytest.fixture(scope="module")
def results(work) -> tuple[Path, dict]:
    spec = work / "res.toml"
    spec.write_text(to_toml(BASE_SPEC))
    out = work / "res"
    r = _run(["simulate", str(spec), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    return out / "fresh.json", json.loads((out / "share.json").read_text())


@pytest.mark.timeout(300)
def test_fuzzed_result_files(work, results, report):
    fresh, share = results
    path = work / "share.json"

    def check(data):
        obj = share
        hostile = data.draw(st.integers(0, 2)) == 0  # else numbers nudged: mutants reach compare
        for _ in range(data.draw(st.integers(1, 2))):
            obj = mutate(obj, data.draw) if hostile else mutate_number(obj, data.draw)
        body = json_text(obj)
        if hostile and data.draw(st.booleans()):
            body = corrupt_text(body, data.draw)
        path.write_text(body, encoding="utf-8")
        return assert_contract(_run(["compare", str(fresh), str(path), "--json", "--num-boot",
                                     "100"]), "compare")

    _fuzz(report, "result files", check, 30)


@pytest.mark.parametrize("make_bad, command", [
    (lambda d: (d / "s.toml", "[workload]\nnum_prompts = nan\n"), ["simulate"]),
    (lambda d: (d / "r.json", '{"duration": 1, "completed": 1, "output_throughput": "x"}'),
     ["compare"]),
])
def test_the_contract_holds_for_the_real_process(tmp_path, make_bad, command):
    """A few of the fuzzed classes through `python -m mtpsim`: what a user's terminal sees."""
    path, text = make_bad(tmp_path)
    path.write_text(text)
    p = subprocess.run([sys.executable, "-m", "mtpsim", *command, str(path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, \
        p.stderr


# The generated cases of issue 24 that broke (one per root cause and surface), kept as a fixed
# corpus: each must end in exit 0 with strict JSON or exit 2 with one line.
PR = str(ROOT / "experiments" / "pr47352.toml")
ADVISE = str(ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml")
SIM = str(ROOT / "docs" / "data" / "pr47352-sim")
ISSUE_CASES = [
    ["simulate", PR, "--set", "workload.num_prompts=1", "--set", "workload.output_len=1", "--json"],
    ["simulate", PR, "--uncertainty", str(2**70), "--json"],
    ["simulate", PR, "--uncertainty", "1000000", "--json"],
    ["sweep", PR, "--set", "engine.max_num_seqs=8,16", "--uncertainty", str(10**6), "--json"],
    ["advise", ADVISE, "--draws", str(10**6), "--json"],
    ["compare", SIM, "--seed", "-1", "--json"],
    ["compare", SIM, "--num-boot", str(10**9), "--json"],
    ["compare", SIM, "--baseline", "bogus", "--json"],
    ["sweep", PR, "--set", 'policies=["fresh"],["share"]', "--set", "workload.num_prompts=4", "--json"],
    ["serve-reference", "--max-model-len", "8192"],
    ["serve-reference", "--max-num-seqs", "100000"],
    ["serve-reference", "--set", "speculative.index_topk=100000"],
    ["serve-reference", "--policy", "shared"],
    ["run-real", str(ROOT / "experiments" / "reference-cpu.toml"), "--set",
     "workload.request_rate=1e-9"],
    ["simulate", PR, "--uncertainty", "2", "--set", "uncertainty.discrepancy_pct=1e11", "--json"],
    ["simulate", "x:smile:y.toml"],
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("args", ISSUE_CASES, ids=[" ".join(a[:3])[-40:] for a in ISSUE_CASES])
def test_the_issues_generated_cases(args, tmp_path):
    if args[0] == "run-real":
        args = [*args, "--out", str(tmp_path / "rr")]
    try:
        res = _run(args)
        out = assert_contract(res, " ".join(args))
        if "x:smile:y.toml" in args:  # user text is never rich markup
            assert "x:smile:y.toml" in res.stderr, res.stderr
        if "shared" in args:  # blamed on the flag the user typed
            assert res.stderr.startswith("error: --policy: "), res.stderr
    except AssertionError:
        record("issue 24's generated cases", 1, 1)
        raise
    record("issue 24's generated cases", 1, 0)
    if args[0] == "simulate" and "--uncertainty" not in args and out is not None:
        assert out["results"]  # the one-token run ran, its JSON strict (no NaN)


HOSTILE_COUNTS = st.integers(-(2**70), 1) | st.integers(4097, 2**70) | st.sampled_from([2, 3])


@pytest.mark.timeout(600)
def test_fuzzed_counts_in_flags(work, report):
    """Draw and replicate counts and seeds: outside their meaning one line, inside it a run."""

    def check(data):
        n = data.draw(HOSTILE_COUNTS)
        args = data.draw(st.sampled_from([
            ["simulate", PR, "--set", "workload.num_prompts=4", "--json", "--uncertainty", str(n)],
            ["advise", ADVISE, "-j", "1", "--json", "--point-dir", str(work / "pts"), "--draws",
             str(n)],
            ["compare", SIM, "--json", "--seed", str(n)],
            ["compare", SIM, "--json", "--num-boot", str(max(n, 100) if n < 4097 else n)],
        ]))
        return assert_contract(_run(args), " ".join(args))

    _fuzz(report, "counts in flags", check, 12)
