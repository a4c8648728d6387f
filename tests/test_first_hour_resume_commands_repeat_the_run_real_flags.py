"""The command that resumes an interrupted `mtpsim run-real` repeats every flag that changes the
run beyond its spec: `--trace`, `--bench-client`, `--level-every`, `--no-probe`. The Ctrl-C line
left out `--no-probe`; the one `compare DIR` prints (read from the results, 248ab21 / f6b3316)
left out all four and asked the user to add them. Each result now records them
(`extra.run_flags`), and the printed command, built with shlex.join, repeats them."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from _reference_models import tiny_spec
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result, load_result

SPEC = """
seed = 3
policies = ["fresh", "share"]
[speculative]
num_speculative_tokens = 2
index_topk = 8
[workload]
num_prompts = 2
input_len = 20
output_len = 8
max_concurrency = 2
[reference]
weights = "{weights}"
device = "cpu"
threads = 1
"""


def _spec(tmp_path: Path) -> Path:
    return tiny_spec(tmp_path, SPEC)


def test_ctrl_c_and_compare_repeat_level_every_and_no_probe(tmp_path, monkeypatch):
    from mtpsim.engine.runner import run_policy
    from mtpsim.real.reference import InProcessReference

    def interrupt_share(exp, policy, progress, level=False):
        if policy == "share":
            raise KeyboardInterrupt
        return run_policy(exp, policy, progress, level=level)

    monkeypatch.setattr(InProcessReference, "target", f"{__name__}:_runner")
    monkeypatch.setattr(sys.modules[__name__], "_runner", interrupt_share, raising=False)
    spec, out = _spec(tmp_path), tmp_path / "out"
    res = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "--rounds", "1",
                                   "--level-every", "16", "--no-probe"])
    assert res.exit_code == 130, res.output
    line = next(ln for ln in res.output.splitlines() if ln.startswith("interrupted:"))
    argv = shlex.split(line.split("resume: ", 1)[1])
    assert argv[-3:] == ["--level-every", "16", "--no-probe"], argv
    assert load_result(out / "fresh.json").extra.run_flags == ["--level-every", "16", "--no-probe"]

    got = CliRunner().invoke(app, ["compare", str(out)])
    text = " ".join(got.output.split())
    assert got.exit_code == 2 and "Traceback" not in got.output, got.output
    argv = shlex.split(text.split("resume it: ", 1)[1].split(" (read from", 1)[0])
    assert argv[-3:] == ["--level-every", "16", "--no-probe"], argv
    assert "add any" not in text


def _round_result(out: Path, flags) -> None:
    reqs = [RequestRecord("r0", 100, 51, 0.0, 0.1, 1.1, [0.02] * 50, [1] * 50, 20, 60, 30, [12, 10, 8])]
    res = Result.from_requests(mode="reference", policy="fresh", requests=reqs, duration_s=1.0)
    res.extra.round = {"index": 0, "of": 2, "position": 0}
    res.extra.run_flags = flags
    res.spec = {"source": "exp.toml", "overrides": ["workload.num_prompts=4"]}
    (out / "rounds" / "r00").mkdir(parents=True)
    res.write(out / "rounds" / "r00" / "fresh.json")


def test_a_rounds_run_resume_repeats_trace_and_bench_client(tmp_path):
    out = tmp_path / "out"
    _round_result(out, ["--trace", "--bench-client", "vllm", "--level-every", "8"])
    got = CliRunner().invoke(app, ["compare", str(out)])
    text = " ".join(got.output.split())
    assert got.exit_code == 2, got.output
    argv = shlex.split(text.split("started it: ", 1)[1].split(" (read from", 1)[0])
    assert argv[-5:] == ["--trace", "--bench-client", "vllm", "--level-every", "8"], argv
    assert "add any" not in text


def test_a_result_without_the_record_or_with_another_flag_asks_to_add_them(tmp_path):
    for i, flags in enumerate((None, ["--force"], ["--bench-client", "--trace"])):
        out = tmp_path / f"out{i}"
        _round_result(out, flags)
        text = " ".join(CliRunner().invoke(app, ["compare", str(out)]).output.split())
        assert "add any --trace, --bench-client, --level-every or --no-probe it had" in text
        assert "--force" not in text.split("started it: ", 1)[1].split(" (read from", 1)[0]
