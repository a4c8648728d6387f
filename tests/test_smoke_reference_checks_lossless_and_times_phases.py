"""The GPU smoke's reference-engine part, run here on the CPU at tiny contexts: at temperature 0
`fresh` and `share` emit the same tokens (speculative decoding is lossless); phase medians come
from pure decode steps, with no indexer time at `share`'s reused steps; each context is written
as it finishes; asking for CUDA without a device is one clean line, exit 2."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from mtpsim.vllm_runner.smoke_reference import DECODE_PHASES, main  # noqa: E402


def test_tiny_contexts_on_the_cpu_are_lossless_and_timed(tmp_path, capsys):
    rc = main(["--device", "cpu", "--contexts", "48", "24", "--topk", "8", "--out-len", "6",
               "--batch", "1", "--threads", "1", "--out", str(tmp_path)])
    assert rc == 0
    runs = json.loads((tmp_path / "reference.json").read_text())["runs"]
    assert [r["context"] for r in runs] == [24, 48]
    for r in runs:
        assert r["lossless"]["ok"] is True
        for policy in ("fresh", "share"):
            assert set(r[policy]["phases_ms"]) == set(DECODE_PHASES)
            assert r[policy]["decode_steps"] > 0
        assert r["share"]["phases_ms"]["draft_decode_indexer"] == 0.0
        assert r["fresh"]["phases_ms"]["draft_decode_indexer"] > 0.0
    assert "lossless OK" in capsys.readouterr().out


def test_cuda_without_a_device_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # also on a GPU machine
    assert main(["--device", "cuda", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "reference on cuda: skipped, torch sees no CUDA device"
