"""Random-token workloads have exact lengths; SPEED-Bench files are read as vLLM 0.33.0's
SpeedBench reads them (first message, category filter, seeded shuffle)."""

from __future__ import annotations

import json

import pytest

from mtpsim.client.workload import random_requests, speed_bench_path, speed_bench_requests
from mtpsim.errors import UserError


def test_random_prompts_are_token_ids_of_the_exact_lengths():
    reqs = random_requests(5, 33, 7, vocab_size=256, seed=3)
    assert [len(r.prompt) for r in reqs] == [33] * 5
    assert all(1 <= t < 256 for r in reqs for t in r.prompt)
    assert [r.output_len for r in reqs] == [7] * 5
    assert reqs[0].payload("openai") == {"prompt": reqs[0].prompt}
    chat = random_requests(2, 10, 4, vocab_size=256, backend="openai-chat")
    assert len(chat[0].payload("openai-chat")["messages"][0]["content"]) == 10


def _write(tmp_path, rows):
    path = tmp_path / "throughput_16k.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_speed_bench_rows_filtered_by_category_and_shuffled(tmp_path):
    rows = [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant",
                                                               "content": "a"}],
             "category": "low_entropy" if i % 2 else "coding"} for i in range(6)]
    path = _write(tmp_path, rows)
    assert speed_bench_path(tmp_path, "throughput_16k") == path
    reqs = speed_bench_requests(path, 5, 2048, category="low_entropy", seed=0)
    contents = [r.messages[0]["content"] for r in reqs]
    assert set(contents) == {"q1", "q3", "q5"} and contents[3:] == contents[:2]
    assert all(r.messages == [{"role": "user", "content": r.messages[0]["content"]}]
               for r in reqs)
    assert reqs[0].payload("openai-chat")["messages"] == reqs[0].messages


def test_speed_bench_prompts_cut_to_max_input_len_with_the_tokenizer(tmp_path):
    class Words:  # a tokenizer whose tokens are words
        def encode(self, text, add_special_tokens=False):
            return text.split()

        def decode(self, tokens):
            return " ".join(tokens)

    path = _write(tmp_path, [{"messages": [{"role": "user", "content": "a b c d e"}]}])
    reqs = speed_bench_requests(path, 1, 8, max_input_len=3, tokenizer=Words())
    assert reqs[0].messages[0]["content"] == "a b c"


def test_bad_speed_bench_files_name_the_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "ok"}]}\n{"turns": []}\n')
    with pytest.raises(UserError, match="line 2"):
        speed_bench_requests(path, 1, 8)
    with pytest.raises(UserError, match="no rows match category 'math'"):
        speed_bench_requests(_write(tmp_path, [{"messages": [{"role": "u", "content": "c"}]}]),
                             1, 8, category="math")
