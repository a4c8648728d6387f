"""The executor (mtpsim.runs.executor) returns the same results whether the jobs run in this
process (-j 1) or on worker processes (-j 2): item order when asked, every item once otherwise,
and the same draws for `--uncertainty` and the same points for a sweep."""

from __future__ import annotations

import os

from _sweep_experiment import write_small

from mtpsim.runs.executor import run_jobs


def _square_with_pid(offset: int, x: int) -> tuple[int, int]:
    return x * x + offset, os.getpid()


def test_ordered_results_are_in_item_order_on_either_path():
    items = list(range(23))
    for workers in (1, 2):
        got = list(run_jobs(_square_with_pid, items, 5, workers))
        assert [i for i, _ in got] == items
        assert [r[0] for _, r in got] == [x * x + 5 for x in items]


def test_two_workers_run_in_other_processes_and_unordered_gives_each_item_once():
    got = list(run_jobs(_square_with_pid, list(range(40)), 0, 2, ordered=False))
    assert sorted(i for i, _ in got) == list(range(40))
    assert all(r[0] == i * i for i, r in got)
    pids = {r[1] for _, r in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_progress_counts_every_job_once():
    seen: list[tuple[int, int]] = []
    list(run_jobs(_square_with_pid, [1, 2, 3], 0, 2, progress=lambda d, t: seen.append((d, t))))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_no_items_runs_nothing():
    assert list(run_jobs(_square_with_pid, [], 0, 4)) == []


def test_uncertainty_draws_are_identical_on_one_and_two_workers(tmp_path):
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.draws import plan, run_draws

    exp = load_experiment(write_small(tmp_path))
    draws = plan(exp, 6)
    one = list(run_draws(exp, draws, None, jobs=1))
    two = list(run_draws(exp, draws, None, jobs=2))
    assert one == two and [i for i, _ in one] == [d.index for d in draws]


def test_sweep_points_are_identical_on_one_and_two_workers(tmp_path):
    from mtpsim.sweep import build_points, run_points

    exp = write_small(tmp_path)
    _, points = build_points(exp, ["workload.max_concurrency=1,2,4"])
    one = {r["point_id"]: r for r in run_points(str(exp), points, None, jobs=1)}
    two = {r["point_id"]: r for r in run_points(str(exp), points, None, jobs=2)}
    assert one == two and len(one) == 3
