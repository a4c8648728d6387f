"""`mtpsim advise` names the deployment it simulates in its table's title: a deployment file that
leaves gpu, tp or quantization out gets defaults (b200, 8, fp8) and the title said only the file,
the contexts and the concurrency, so the GPUs assumed were nowhere on screen."""

from types import SimpleNamespace

from mtpsim.report.advise import advise_table
from mtpsim.uncertainty.advise import load_deployment


def test_defaults_left_out_of_the_file_are_in_the_title(tmp_path):
    dep = tmp_path / "dep.toml"
    dep.write_text('[deployment]\nmodel = "deepseek-v3.2"\n')
    table = advise_table(SimpleNamespace(dep=load_deployment(dep), n_draws=2), [], 0.9)
    assert str(table.title).startswith(f"{dep}: deepseek-v3.2 on 8 x b200 (fp8); mix of contexts")


def test_a_written_deployment_reads_as_written(tmp_path):
    dep = tmp_path / "dep.toml"
    dep.write_text('[deployment]\nmodel = "deepseek-v3.2"\ngpu = "h200"\ntp = 8\n'
                   'quantization = "fp8"\n')
    table = advise_table(SimpleNamespace(dep=load_deployment(dep), n_draws=2), [], 0.9)
    assert ": deepseek-v3.2 on 8 x h200 (fp8);" in str(table.title)
