"""A field whose built-in default fails its check because the spec left it unset (a model
without a preset: `[model] preset = ""`) says that it was not set, rather than blaming a 0 the
user never wrote; a value the user wrote is shown as before."""

from typer.testing import CliRunner

from mtpsim.cli import app


def _error(tmp_path, text):
    path = tmp_path / "exp.toml"
    path.write_text(text)
    res = CliRunner().invoke(app, ["simulate", str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    return " ".join(res.output.split())


def test_an_unset_field_is_named_as_unset(tmp_path):
    got = _error(tmp_path, '[model]\npreset = ""\n')
    assert ("model.num_layers: expected a number >= 1, got 0 (not set: the built-in default; "
            "set model.num_layers)") in got


def test_a_written_value_is_shown_as_written(tmp_path):
    got = _error(tmp_path, '[model]\npreset = ""\nnum_layers = 0\n')
    assert "model.num_layers: expected a number >= 1, got 0" in got and "not set" not in got
