"""A simulated table's title with workload.max_concurrency unset (every request at once, vLLM
bench's default) says `no conc limit`; it printed `conc None`, a Python value the user never wrote.
A set limit still reads `conc 32`."""

from mtpsim.report.titles import setup_title
from mtpsim.spec import load_experiment


def test_a_set_limit_reads_as_before():
    assert "· conc 32 ·" in setup_title(load_experiment("experiments/pr47352.toml", []), "simulated")


def test_an_unset_limit_reads_as_no_limit(tmp_path):
    spec = tmp_path / "e.toml"
    spec.write_text("[engine]\ntp = 8\n[workload]\nnum_prompts = 4\n")
    title = setup_title(load_experiment(str(spec), []), "simulated")
    assert "None" not in title and "· no conc limit ·" in title, title
