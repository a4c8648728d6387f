"""`mtpsim sweep --engine reference --set speculative.num_speculative_tokens=0,1` ran the k = 1
point and failed the k = 0 one inside its worker (`ValueError: num_speculative_tokens, index_topk
and max_num_seqs must be >= 1`, exit 1, a failed.json left in --out): run-real's refusal of plain
decoding was not among the per-point checks a real sweep makes before any runs. Now it is one
line naming the point, before any point runs. That refusal, and a real run's arrival span, also
blamed the experiment file for a value `--set` gave: now they name `--set` there."""

from _cli import one_error_line

TINY = ["--set", "workload.num_prompts=1", "--set", "workload.input_len=32",
        "--set", "workload.output_len=2", "--set", "speculative.index_topk=16",
        "--set", "policies=[\"fresh\"]"]


def test_a_real_sweep_refuses_a_k0_point_before_any_runs(tmp_path):
    out = tmp_path / "sw"
    line = one_error_line("sweep", "experiments/reference-cpu.toml", "--engine", "reference",
                          "-j", "1", *TINY, "--set", "speculative.num_speculative_tokens=0,1",
                          "--out", str(out))
    assert line.startswith("error: --set: speculative.num_speculative_tokens: expected >= 1 for "
                           "sweep --engine"), line
    assert line.endswith("(at speculative.num_speculative_tokens=0)") and not out.exists()


def test_real_run_refusals_name_the_flag_that_set_the_value(tmp_path):
    line = one_error_line("run-real", "experiments/reference-cpu.toml", *TINY,
                          "--set", "speculative.num_speculative_tokens=0", "--out", str(tmp_path / "a"))
    assert line.startswith("error: --set: speculative.num_speculative_tokens: expected >= 1"), line
    line = one_error_line("run-real", "experiments/reference-cpu.toml",
                          "--set", "workload.request_rate=1e-9", "--out", str(tmp_path / "b"))
    assert line.startswith("error: --set: workload.request_rate: expected arrivals within"), line
    line = one_error_line("run-real", "experiments/reference-cpu.toml", *TINY[:2],
                          "--out", str(tmp_path / "c"), "--set", "workload.request_rate=1e-5",
                          "--set", "workload.num_prompts=2")
    assert line.startswith("error: --set: workload.request_rate:"), line
