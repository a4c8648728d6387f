"""`run-real --engine reference` runs the reference engine's own small DSA + MTP model whatever
the spec's [model] says. For a DSA model (family dsa_mla: DeepSeek-V3.2, GLM-5.2) that is a
scaled-down stand-in, and the run prints a note saying so; for a model of another family (mla:
DeepSeek-V3/R1, dense attention with no indexer; hybrid_linear_dsa) it stands in for nothing,
and the run is one line naming model.family before anything runs (exit 2). It used to run
without complaint, titling a top-64 run of the small model "dense"."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.errors import UserError
from mtpsim.real import backend
from mtpsim.real.reference import stand_in_note
from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]
REF = "experiments/reference-cpu.toml"
SMALL = ["--set", "workload.num_prompts=1", "--set", "workload.input_len=32",
         "--set", "workload.output_len=4", "--set", "speculative.index_topk=16", "-p", "fresh",
         "--no-probe"]


def _run_real(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", "run-real", *args, "--out", str(tmp_path / "o"),
                           *SMALL], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("preset, family", [("deepseek-v3", "mla"),
                                            ("hybrid-linear-dsa", "hybrid_linear_dsa")])
@pytest.mark.parametrize("server", [False, True])
def test_a_model_of_another_family_is_refused_by_both_reference_backends(preset, family, server):
    exp = load_experiment(REF, [f"model.preset={preset}", "policies=fresh"])
    with pytest.raises(UserError, match=rf"^--set: model\.family: expected 'dsa_mla' with the "
                       rf"reference engine, .* got '{family}' \(model\.preset '{preset}'\)"):
        backend("reference", server=server).refuse(exp, exp.policies)


def test_the_refusal_names_the_file_that_sets_the_model(tmp_path):
    f = tmp_path / "r1.toml"
    f.write_text((ROOT / REF).read_text().replace('[engine]', '[model]\npreset = "deepseek-v3"\n\n[engine]')
                 .replace('policies = ["fresh", "share", "share_recent", "target_share"]',
                          'policies = ["fresh"]'))
    r = _run_real(tmp_path, str(f))
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {f}: model.family: expected 'dsa_mla'"), r.stderr
    assert "--engine vllm" in lines[0] and not (tmp_path / "o" / "fresh.json").exists()


def test_a_dsa_model_runs_with_a_note_that_the_small_model_stands_in(tmp_path):
    assert stand_in_note(load_experiment(REF)) is None  # the reference preset is what it runs
    note = stand_in_note(load_experiment(REF, ["model.preset=glm-5.2"]))
    assert note is not None and note.startswith("note: the reference engine runs its own small")
    assert "stand-in for model.preset 'glm-5.2'" in note
    r = _run_real(tmp_path, REF, "--set", "model.preset=glm-5.2")
    assert r.returncode == 0, r.stderr
    assert "stand-in for model.preset 'glm-5.2'" in " ".join(r.stderr.split()), r.stderr
    plain = _run_real(tmp_path, REF, "--force")
    assert plain.returncode == 0 and "stand-in" not in plain.stderr, plain.stderr
