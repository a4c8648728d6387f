"""`mtpsim advise --json`'s `recommendation` is the one the table's "recommended:" line states.
A script that reads `recommendation.policy` deploys it: where the best median gain is not robust
("cannot tell"), that is the best fresh setting, not the candidate the doubt is about (which is
`best_median`, with `robust: false`)."""

import json
import re

import pytest
from _advise_files import deployment, known_advice  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app

DEP = deployment("k = [1, 2]\ndraws = 16\nmax_draws = 16", description="tiny")


def _known(dep_path, share_gain):
    """Fresh k=2 beats fresh k=1 by 5 % in every draw; share at k=2 gains `share_gain(u)` % over
    fresh k=2, u a draw's quantile."""
    return known_advice(dep_path, share_gain)


@pytest.mark.parametrize("share_gain, expected", [
    (lambda u: 2.0 + u, (2, "share")),  # +2..+3 % in every draw: share is robust
    (lambda u: 8 * (u - 0.45), (2, "fresh")),  # spans 0: cannot tell, fresh stays
    (lambda u: 0.02 + 2 * u ** 8, (2, "fresh")),  # above 0, but within its MC margin of it
])
def test_json_recommendation_is_the_tables(monkeypatch, tmp_path, share_gain, expected):
    import mtpsim.uncertainty.advise as adv_mod

    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    known = _known(p, share_gain)
    monkeypatch.setattr(adv_mod, "advise", lambda dep, jobs=1, progress=None: known)
    args = ["advise", str(p), "-j", "1", "--point-dir", str(tmp_path / "pts")]
    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    js = CliRunner().invoke(app, [*args, "--json"])
    assert table.exit_code == 0 and js.exit_code == 0, table.output + js.output
    said = re.search(r"^recommended: k=(\d+), (\w+):", table.stdout, re.M)
    out = json.loads(js.stdout)
    rec = out["recommendation"]
    assert (int(said[1]), said[2]) == (rec["k"], rec["policy"]) == expected
    assert any(v.startswith(f"recommended: k={rec['k']}, {rec['policy']}:") for v in out["verdict"])
    best = out["best_median"]
    assert (best["k"], best["policy"]) == (2, "share")
    # not robust <=> "cannot tell" about the best median, and the recommendation stays fresh
    assert best["robust"] == (out["cannot_tell"] is None) == (expected == (2, "share"))
    if out["cannot_tell"] is not None:
        assert (out["cannot_tell"]["k"], out["cannot_tell"]["policy"]) == (2, "share")
        assert rec["gain_pct"]["median"] == 0  # the best fresh setting: the baseline itself
