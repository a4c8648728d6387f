"""`mtpsim run-real` keeps a finished policy only when its result was made with the same
settings; a result of other settings is refused (one line, exit 2) until `--force`, and an
unusable `--out` is refused before anything runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_run_real_reference_writes_results_and_traces import _setup
from typer.testing import CliRunner

from mtpsim.cli import app


def _run(spec: Path, out: Path, *extra: str):
    # --no-probe: which settings resume is all these tests ask; the machine-speed probe (two
    # readings of a few CPU seconds per run) is tested where it is asked about
    # (test_run_real_runs_policies_in_interleaved_rounds_with_probes.py)
    return CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "-p", "fresh",
                                    "--no-probe", *extra])


@pytest.mark.slow
def test_a_changed_set_is_not_resumed_silently(tmp_path):
    spec, out = _setup(tmp_path), tmp_path / "out"
    assert _run(spec, out).exit_code == 0
    first = (out / "fresh.json").stat().st_mtime_ns

    same = _run(spec, out)
    assert same.exit_code == 0 and "fresh: kept" in same.output

    changed = _run(spec, out, "--set", "workload.num_prompts=2")
    assert changed.exit_code == 2, changed.output
    line = changed.output.strip()
    assert "\n" not in line and "workload.num_prompts" in line and "--force" in line
    assert (out / "fresh.json").stat().st_mtime_ns == first  # nothing was rerun or replaced

    forced = _run(spec, out, "--set", "workload.num_prompts=2", "--force")
    assert forced.exit_code == 0, forced.output
    assert (out / "fresh.json").stat().st_mtime_ns != first


@pytest.mark.slow
def test_a_changed_simulator_model_or_prior_keeps_the_real_result(tmp_path):
    # [acceptance] and [uncertainty] only shape the simulator: a real run made under another
    # penalty form or other priors is the same run
    spec, out = _setup(tmp_path), tmp_path / "out"
    assert _run(spec, out).exit_code == 0
    first = (out / "fresh.json").stat().st_mtime_ns
    for change in ('uncertainty.priors.overlap_agreement="uniform(0.3, 0.4)"',
                   'acceptance.penalty="kappa"'):
        again = _run(spec, out, "--set", change)
        assert again.exit_code == 0 and "fresh: kept" in again.output, (change, again.output)
    assert (out / "fresh.json").stat().st_mtime_ns == first


def test_another_seed_or_policy_file_is_not_resumed(tmp_path):
    spec, out = _setup(tmp_path), tmp_path / "out"
    assert _run(spec, out).exit_code == 0
    (out / "share.json").write_bytes((out / "fresh.json").read_bytes())  # fresh's result as share's
    r = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "-p", "share", "--no-probe"])
    assert r.exit_code == 2 and "policy" in r.output
    r = _run(spec, out, "--seed", "11")
    assert r.exit_code == 2 and "seed" in r.output


def _unwritable_folder(tmp_path: Path) -> tuple[Path, Path]:
    """(a folder nobody may write into, its parent to unlock). Root ignores permission bits, so
    it gets a folder under /proc, which no one can create."""
    if os.geteuid() == 0 and Path("/proc/self").is_dir():
        return Path("/proc/self/mtpsim-out"), Path("/proc/self")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    return locked / "out", locked


def test_an_unwritable_out_is_refused_before_the_run(tmp_path):
    spec = _setup(tmp_path)
    target, parent = _unwritable_folder(tmp_path)
    try:
        r = _run(spec, target)
        assert r.exit_code == 2, r.output
        assert f"--out: {target}: expected a folder to write into" in r.output
        assert r.output.count("\n") == 1  # one line, and no progress: the engine never ran
    finally:
        if parent.is_relative_to(tmp_path):
            parent.chmod(0o700)


def test_a_file_as_out_is_refused_before_the_run(tmp_path):
    spec = _setup(tmp_path)
    blocker = tmp_path / "taken"
    blocker.write_text("")
    r = _run(spec, blocker)
    assert r.exit_code == 2 and "expected a folder to write into" in r.output


@pytest.mark.slow
def test_weights_are_compared_by_content_not_by_path(tmp_path):
    import hashlib
    import json
    import shutil

    spec, out = _setup(tmp_path), tmp_path / "out"
    w = tmp_path / "w.safetensors"
    assert _run(spec, out).exit_code == 0
    recorded = json.loads((out / "fresh.json").read_text())["extra"]["weights_sha256"]
    expected = hashlib.sha256(w.read_bytes() + b"\0" + w.with_suffix(".json").read_bytes() + b"\0")
    assert recorded == expected.hexdigest()

    moved = tmp_path / "moved" / "w.safetensors"  # the same weights elsewhere: the same run
    moved.parent.mkdir()
    for src in (w, w.with_suffix(".json")):
        shutil.copy(src, moved.parent / src.name)
    kept = _run(spec, out, "--set", f"reference.weights={json.dumps(str(moved))}")
    assert kept.exit_code == 0 and "fresh: kept" in kept.output, kept.output

    meta = json.loads(w.with_suffix(".json").read_text())  # retrained in place: not the same run
    meta["note"] = "retrained"
    w.with_suffix(".json").write_text(json.dumps(meta))
    refused = _run(spec, out)
    assert refused.exit_code == 2, refused.output
    assert "reference weights (content)" in refused.output and "--force" in refused.output


def test_a_result_from_before_a_new_default_field_is_still_resumed(tmp_path):
    """A result written before mtpsim gained a spec field (its spec lacks the key) resumes while
    the new field keeps its default, and is refused once the field is set to something else."""
    import json

    spec, out = _setup(tmp_path), tmp_path / "out"
    assert _run(spec, out).exit_code == 0
    path = out / "fresh.json"
    obj = json.loads(path.read_text())
    del obj["spec"]["reference"]["clock"]  # as an older mtpsim wrote it
    del obj["spec"]["workload"]["ignore_eos"]
    path.write_text(json.dumps(obj))
    first = path.stat().st_mtime_ns

    kept = _run(spec, out)
    assert kept.exit_code == 0 and "fresh: kept" in kept.output, kept.output
    assert path.stat().st_mtime_ns == first

    changed = _run(spec, out, "--set", 'reference.clock="cpu"')
    assert changed.exit_code == 2 and "reference.clock" in changed.output


def test_a_result_from_before_a_preset_field_was_added_still_resumes():
    """docs/data/reference-cpu was written before hardware.sms existed (04b9efa): its B200 preset
    now sets 148 SMs, which the old spec lacks. That is the same run, not a changed setting;
    an SM count set otherwise still is one."""
    import json

    from mtpsim.real.run import _changed, _settings, with_added_fields
    from mtpsim.spec.experiment import experiment_from_dict

    root = Path(__file__).resolve().parents[1]
    spec = json.loads((root / "docs/data/reference-cpu/fresh.json").read_text())["spec"]
    assert "sms" not in spec["hardware"]
    raw = {k: v for k, v in spec.items() if k not in ("source", "overrides")}
    now = _settings(experiment_from_dict(raw).to_dict())
    assert _changed(_settings(spec), now) == ["hardware.sms"]  # what refused the resume
    assert _changed(_settings(with_added_fields(spec)), now) == []
    other = _settings(experiment_from_dict(raw, overrides=["hardware.sms=160"]).to_dict())
    assert _changed(_settings(with_added_fields(spec)), other) == ["hardware.sms"]
