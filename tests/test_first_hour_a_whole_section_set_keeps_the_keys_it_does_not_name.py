"""`--set workload={num_prompts=8}` (a whole section as an inline table) sets the keys it names
over the experiment file's, as `--set workload.num_prompts=8` does; it used to replace the
section, silently dropping the file's other keys (pr47352's 10,240-token prompts became the
default length) and simulating another workload without a word."""

from mtpsim.spec import load_experiment

PR = "experiments/pr47352.toml"


def test_an_inline_table_sets_only_the_keys_it_names():
    base = load_experiment(PR)
    table = load_experiment(PR, ["workload={num_prompts = 8, output_len = 100}"])
    dotted = load_experiment(PR, ["workload.num_prompts=8", "workload.output_len=100"])
    assert table.workload == dotted.workload
    assert table.workload.input_len == base.workload.input_len
    assert (table.workload.num_prompts, table.workload.output_len) == (8, 100)


def test_a_dict_field_is_still_replaced_whole():
    row = "{fresh = {output_throughput = 100.0, median_tpot_ms = 20.0}}"
    exp = load_experiment(PR, [f"calibration.measured={row}"])
    assert exp.calibration.measured == {"fresh": {"output_throughput": 100.0, "median_tpot_ms": 20.0}}
