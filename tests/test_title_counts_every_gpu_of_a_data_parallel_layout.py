"""A simulated table's title names the deployment's GPUs: dp x tp x pp of them, with the layout
where TP alone does not say it. A DP8 + EP row printed "on 1 x H200" (the TP size) for eight
GPUs; a TP-only deployment reads as before ("on 4 x B200")."""

from mtpsim.report.titles import setup_title
from mtpsim.spec import load_experiment


def _title(tmp_path, engine: str) -> str:
    spec = tmp_path / "e.toml"
    spec.write_text(f'[hardware]\npreset = "h200"\n[engine]\n{engine}\n[workload]\nnum_prompts = 4\n')
    return setup_title(load_experiment(str(spec), []), "simulated")


def test_tp_only_reads_as_before():
    assert " on 4 x B200 · " in setup_title(load_experiment("experiments/pr47352.toml", []), "simulated")


def test_data_parallel_ranks_are_counted_and_named(tmp_path):
    assert " on 8 x H200 (DP8 x TP1, EP) · " in _title(tmp_path, "tp = 1\ndp = 8\nep = true")
    assert " on 8 x H200 (DP2 x TP4) · " in _title(tmp_path, "tp = 4\ndp = 2")


def test_a_preset_set_alone_is_named_not_the_files_checkpoint():
    """--set model.preset=glm-5.2 on a file that names the DeepSeek checkpoint: the title names
    what is simulated (the preset), not the stale checkpoint name; a --set name still wins."""
    title = setup_title(load_experiment("experiments/pr47352.toml", ['model.preset="glm-5.2"']),
                        "simulated")
    assert title.startswith("pr47352: glm-5.2 on ") and "DeepSeek" not in title
    both = load_experiment("experiments/pr47352.toml", ['model.preset="glm-5.2"', 'model.name="x/GLM"'])
    assert setup_title(both, "simulated").startswith("pr47352: GLM on ")
