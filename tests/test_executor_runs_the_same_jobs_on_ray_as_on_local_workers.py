"""The executor's Ray backend (a local two-node cluster on 127.0.0.1) keeps the local pool's
protocol: the same results in the same order, the same one-line failure naming the job, bad input
as itself, `keep_going`'s `Failed`, one task per placed job, and `--uncertainty` draws identical
to the local ones."""

from __future__ import annotations

import sys

import pytest
from _ray_cluster import write_tiny  # noqa: F401 - sets Ray's loopback switch first

ray = pytest.importorskip("ray")

from _sweep_experiment import write_small  # noqa: E402

from mtpsim.errors import JobError, SpecError  # noqa: E402
from mtpsim.runs.executor import Failed, Placement, Pool, run_jobs  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

# The jobs below live in this test module, which the nodes cannot import: ship them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _job(kind: str, x: int) -> tuple[int, str]:
    if x == 3 and kind == "bug":
        raise ZeroDivisionError("division by zero\nsecond line")
    if x == 3 and kind == "spec":
        raise SpecError("exp.toml", "workload.input_len", "expected a positive int")
    return x * x, ray.get_runtime_context().get_task_name() if kind == "named" else ""


@pytest.fixture
def pool(ray_cluster):
    from mtpsim.cluster.connect import connect, disconnect

    nodes = connect(ray_cluster.address)
    try:
        yield Pool(nodes=tuple(nodes))
    finally:
        disconnect()


def test_results_and_their_order_match_the_local_pool(pool):
    items = list(range(11))
    local = [(i, r[0]) for i, r in run_jobs(_job, items, "ok", 1)]  # no fork beside Ray's threads
    on_ray = list(run_jobs(_job, items, "ok", pool))
    assert [(i, r[0]) for i, r in on_ray] == local == [(x, x * x) for x in items]
    unordered = list(run_jobs(_job, items, "ok", pool, ordered=False))
    assert sorted((i, r[0]) for i, r in unordered) == local


def test_failures_read_as_on_the_local_pool(pool):
    with pytest.raises(JobError) as local:
        list(run_jobs(_job, list(range(6)), "bug", 1))
    with pytest.raises(JobError) as on_ray:
        list(run_jobs(_job, list(range(6)), "bug", pool))
    assert str(on_ray.value) == str(local.value) == "job 4 of 6 failed: ZeroDivisionError: division by zero"
    with pytest.raises(SpecError) as e:
        list(run_jobs(_job, list(range(6)), "spec", pool, keep_going=True))
    assert e.value.message() == "exp.toml: workload.input_len: expected a positive int"
    kept = dict(run_jobs(_job, list(range(6)), "bug", pool, keep_going=True))
    assert kept[3] == Failed("ZeroDivisionError: division by zero")
    assert {i: r[0] for i, r in kept.items() if i != 3} == {i: i * i for i in (0, 1, 2, 4, 5)}


def test_a_placed_job_is_a_named_task_of_its_own(pool):
    got = dict(run_jobs(_job, [1, 2], "named", pool, placement=lambda x: Placement(1, 0, f"mtpsim-x{x}")))
    assert got == {0: (1, "mtpsim-x1"), 1: (4, "mtpsim-x2")}
    batched = dict(run_jobs(_job, [1, 2], "named", pool))
    assert {r[1] for r in batched.values()} == {"mtpsim-jobs"}


def test_uncertainty_draws_on_ray_equal_the_local_ones(pool, tmp_path):
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.draws import plan, run_draws

    exp = load_experiment(write_small(tmp_path))
    draws = plan(exp, 6)
    assert list(run_draws(exp, draws, None, jobs=pool)) == list(run_draws(exp, draws, None, jobs=1))
