"""`--set key=v1,v2` axes: values split outside brackets and quotes, the grid is the product,
every point is validated before anything runs, and a bad `--set` exits 2 in one line."""

import pytest
from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.errors import SpecError
from mtpsim.sweep import build_points, parse_axes, split_values


def test_values_split_on_commas_outside_brackets_and_quotes():
    assert split_values("1,2, 3") == ["1", "2", "3"]
    assert split_values('["fresh","share"],["fresh"]') == ['["fresh","share"]', '["fresh"]']
    assert split_values('"a,b",c') == ['"a,b"', "c"]
    with pytest.raises(SpecError):
        split_values("[1,2")


def test_unbalanced_values_name_their_key():
    with pytest.raises(SpecError, match=r"^--set: workload.num_prompts: expected balanced .*'\[4'"):
        parse_axes(["workload.num_prompts=[4"])


def test_one_value_is_a_plain_override_and_several_make_an_axis():
    fixed, axes = parse_axes(["workload.num_prompts=8", "speculative.num_speculative_tokens=1,2,3"])
    assert fixed == ["workload.num_prompts=8"]
    assert [(a.key, a.values) for a in axes] == [("speculative.num_speculative_tokens", ("1", "2", "3"))]


def test_the_grid_is_the_product_of_the_axes_with_distinct_point_ids(tmp_path):
    axes, points = build_points(write_small(tmp_path), [
        "speculative.num_speculative_tokens=1,2,3", "workload.max_concurrency=1,4"])
    assert len(points) == 6 and len({p.point_id for p in points}) == 6
    assert points[0].values == {"speculative.num_speculative_tokens": 1, "workload.max_concurrency": 1}


def test_a_k_beyond_the_measured_positions_extends_acceptance_with_a_note(tmp_path):
    _, points = build_points(write_small(tmp_path), ["speculative.num_speculative_tokens=3,5"])
    assert points[0].notes == ()
    assert "extrapolated" in points[1].notes[0]


@pytest.mark.parametrize("bad, field", [
    ("speculative.num_speculative_tokens=1,-1", "speculative.num_speculative_tokens"),
    ("workload.max_concurrency=4,x", "workload.max_concurrency"),
    ("nosuch.key=1,2", "nosuch"),
    ("workload.num_prompts", "workload.num_prompts"),
    ("workload.input_len=1,,2", "workload.input_len"),
])
def test_a_bad_set_exits_2_with_one_line_naming_the_key(tmp_path, bad, field):
    res = CliRunner().invoke(app, ["sweep", str(write_small(tmp_path)), "--set", bad],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in res.output
