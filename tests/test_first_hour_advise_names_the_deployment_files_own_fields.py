"""`mtpsim advise` builds one experiment per cell from the deployment file, and a value the cell's
experiment refused was named by the experiment's field, which the deployment file does not have:
`tp = 3` in [deployment] was `engine.tp: ...`, a 20,000,000-token context `workload.input_len:
...`, `concurrency = [100000]` `workload.num_prompts: ..., got 200000`. Now each names the
deployment file's field (deployment.tp, workload.context_lengths, workload.concurrency, with
how the cell used it)."""

import re
from pathlib import Path

import pytest
from _cli import ROOT, one_error_line

DEPLOYMENT = (ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(("line", "change", "expected"), [
    (r"^tp = 4.*$", "tp = 3", "deployment.tp: expected a divisor of model.num_heads (128), got 3"),
    (r"^context_lengths = .*$", "context_lengths = [1024, 4096, 20000000]",
     "workload.context_lengths: expected a number in [1, 1e+07], got 20000000 (a cell's prompt length)"),
    (r"^concurrency = .*$", "concurrency = [100000]",  # checked up front: the number written
     "workload.concurrency: expected a non-empty list of concurrencies (integers in [1, 50,000]: a "
     "cell runs 2 x concurrency prompts), got [100000]"),
])
def test_a_cells_refusal_names_the_deployment_field(tmp_path: Path, line, change, expected):
    path = tmp_path / "dep.toml"
    text, n = re.subn(line, change, DEPLOYMENT, flags=re.MULTILINE)
    assert n == 1
    path.write_text(text, encoding="utf-8")
    got = one_error_line("advise", str(path), "--draws", "2", "-j", "1", quiet_stdout=True)
    assert got == f"error: {path}: {expected}", got
