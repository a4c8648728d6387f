"""A user error ends a command with one line on stderr, printed verbatim, and exit code 2."""

import pytest

from mtpsim.cli import exits_on_user_error
from mtpsim.errors import SpecError


def test_bracketed_spec_names_survive_rich_markup(capsys):
    @exits_on_user_error
    def command() -> None:
        raise SpecError("exp.toml", "calibration", "expected a [calibration] table to write into")

    with pytest.raises(SystemExit) as exc:
        command()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "exp.toml: calibration: expected a [calibration] table to write into" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_other_exceptions_are_not_swallowed():
    @exits_on_user_error
    def command() -> None:
        raise RuntimeError("a bug, not bad input")

    with pytest.raises(RuntimeError):
        command()
