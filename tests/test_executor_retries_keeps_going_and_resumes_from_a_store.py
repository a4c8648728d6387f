"""The executor's protocol beyond a plain batch, on one worker or two: a failing job is rerun
`pool.retries` times (bad input never), `keep_going` yields a one-line `Failed` in its place and
finishes the rest, and a `store` makes the batch resumable: held items are not run, new results
are saved on the driver as they arrive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtpsim.errors import JobError, SpecError, UserError
from mtpsim.runs.executor import Failed, Pool, run_jobs


def _flaky(folder: str, x: int) -> tuple[int, int]:
    """Fails the first two times it sees x == 2 (counted in files: workers are processes)."""
    if x == 2:
        marks = Path(folder) / "tries"
        marks.mkdir(exist_ok=True)
        (marks / str(len(list(marks.iterdir())))).touch()
        if len(list(marks.iterdir())) <= 2:
            raise ConnectionError(f"attempt {len(list(marks.iterdir()))} refused\nmore")
    return x * 10, os.getpid()


def _spec_on_two(folder: str, x: int) -> int:
    if x == 2:
        (Path(folder) / f"spec-{os.getpid()}-{len(list(Path(folder).iterdir()))}").touch()
        raise SpecError("exp.toml", "workload.input_len", "expected a positive int")
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_a_job_is_rerun_until_it_succeeds_within_its_retries(tmp_path, workers):
    got = dict(run_jobs(_flaky, [0, 1, 2, 3], str(tmp_path), Pool(workers, retries=2)))
    assert {i: r[0] for i, r in got.items()} == {0: 0, 1: 10, 2: 20, 3: 30}
    assert len(list((tmp_path / "tries").iterdir())) == 3  # two failures, then the success


@pytest.mark.parametrize("workers", [1, 2])
def test_past_its_retries_a_job_fails_with_one_line_or_yields_failed(tmp_path, workers):
    (tmp_path / "a").mkdir()
    with pytest.raises(JobError) as e:
        list(run_jobs(_flaky, [0, 1, 2, 3], str(tmp_path / "a"), Pool(workers, retries=1)))
    assert str(e.value) == "job 3 of 4 failed: ConnectionError: attempt 2 refused"
    (tmp_path / "b").mkdir()
    got = dict(run_jobs(_flaky, [0, 1, 2, 3], str(tmp_path / "b"), Pool(workers), keep_going=True))
    assert got[2] == Failed("ConnectionError: attempt 1 refused")
    assert {i: r[0] for i, r in got.items() if i != 2} == {0: 0, 1: 10, 3: 30}


@pytest.mark.parametrize("workers", [1, 2])
def test_bad_input_is_never_rerun_and_arrives_as_itself_even_when_keeping_going(tmp_path, workers):
    with pytest.raises(SpecError):
        list(run_jobs(_spec_on_two, [0, 1, 2, 3], str(tmp_path), Pool(workers, retries=3),
                      keep_going=True))
    assert len(list(tmp_path.iterdir())) == 1


class _Dict:
    def __init__(self, held: dict[int, int]) -> None:
        self.held, self.saved = held, []

    def load(self, item: int) -> tuple[int, int] | None:
        return (self.held[item], -1) if item in self.held else None

    def save(self, item: int, result: tuple[int, int]) -> None:
        self.saved.append((item, result[0]))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_store_resumes_held_items_and_saves_new_ones_on_the_driver(tmp_path, workers):
    store = _Dict({1: 111, 3: 333})
    seen: list[tuple[int, int]] = []
    got = list(run_jobs(_flaky, [0, 1, 3, 4], str(tmp_path), workers, store=store,
                        progress=lambda d, t: seen.append((d, t))))
    assert [(i, r[0]) for i, r in got] == [(0, 0), (1, 111), (2, 333), (3, 40)]  # item order
    assert [r[1] for i, r in got if i in (1, 2)] == [-1, -1]  # held: not run
    assert sorted(store.saved) == [(0, 0), (4, 40)]
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    unordered = list(run_jobs(_flaky, [0, 1, 3, 4], str(tmp_path), workers, ordered=False,
                              store=_Dict({1: 111, 3: 333})))
    assert [i for i, _ in unordered[:2]] == [1, 2]  # what the store holds comes first


class _PortTaken(UserError):
    transient = True  # as ServerError: a run that may succeed when tried again


def _busy_on_one(folder: str, x: int) -> int:
    if x == 1:
        (Path(folder) / f"try-{len(list(Path(folder).iterdir()))}").touch()
        raise _PortTaken(None, "--port", "expected a free port on 127.0.0.1")
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_a_transient_user_error_is_rerun_and_recorded_like_any_failure(tmp_path, workers):
    got = dict(run_jobs(_busy_on_one, [0, 1, 2], str(tmp_path), Pool(workers, retries=1),
                        keep_going=True))
    assert got == {0: 0, 1: Failed("_PortTaken: --port: expected a free port on 127.0.0.1"), 2: 2}
    assert len(list(tmp_path.iterdir())) == 2
