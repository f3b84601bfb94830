"""When the supervisor replaces a worker (`librarian_svc/worker_health.py`): silence past `WORKER_HUNG_AFTER_S`, or
no service `WORKER_START_ALLOWANCE_S` after its start, both counted on the supervisor's own clock.

The live checks (a stuck loop, a start that never serves) are in test_workers.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from librarian_svc.settings import load_settings
from librarian_svc.worker_health import (
    TICK_CREDIT_S,
    WORKER_START_ALLOWANCE_S,
    SupervisedClock,
    WorkerHealth,
)
from librarian_svc.workers import uvicorn_config

HUNG_AFTER_S = 5.0
STOPPED = "a worker stopped answering: replacing it"
NOT_SERVING = "a worker did not start serving in time: replacing it"


def wall_clock(readings: list[float]) -> SupervisedClock:
    """A supervised clock over the given wall readings (the first is read when the clock is made)."""
    values: Iterator[float] = iter(readings)
    return SupervisedClock(wall=lambda: next(values))


def test_the_clock_follows_the_wall_while_the_supervisor_ticks_and_counts_a_starved_gap_as_one_credit() -> None:
    clock = wall_clock([100.0, 100.1, 100.2, 160.2, 160.3, 160.3])
    expected = [0.1, 0.2, 0.2 + TICK_CREDIT_S, 0.3 + TICK_CREDIT_S, 0.3 + TICK_CREDIT_S]
    assert [round(clock.tick(), 6) for _ in range(5)] == expected


def test_a_minute_without_cpu_for_the_whole_instance_does_not_make_a_serving_worker_hung() -> None:
    """Cloud Run throttles an idle instance: the supervisor and the worker were starved alike."""
    clock = wall_clock([0.0, 0.0, 0.1, 60.1, 60.2])
    health = WorkerHealth.starting(clock.tick())
    health.answered(clock.tick(), serving=True)
    assert health.failure(clock.tick(), HUNG_AFTER_S) is None  # 60 s of wall time, one credit of silence
    assert health.failure(clock.tick(), HUNG_AFTER_S) is None


@pytest.mark.parametrize(
    ("answers", "now", "expected"),
    [
        pytest.param([], WORKER_START_ALLOWANCE_S - 0.1, None, id="silent-while-its-interpreter-starts"),
        pytest.param([], WORKER_START_ALLOWANCE_S, NOT_SERVING, id="never-answered"),
        pytest.param([(1.0, False)], 1.0 + HUNG_AFTER_S - 0.1, None, id="starting-and-answering"),
        pytest.param([(1.0, False)], 1.0 + HUNG_AFTER_S, STOPPED, id="starting-then-silent"),
        pytest.param(
            [(WORKER_START_ALLOWANCE_S - 0.5, False)], WORKER_START_ALLOWANCE_S, NOT_SERVING, id="never-serves"
        ),
        pytest.param([(2.0, True), (70.0, True)], 74.9, None, id="serving-and-answering"),
        pytest.param([(2.0, True), (70.0, True)], 75.0, STOPPED, id="serving-then-silent"),
    ],
)
def test_why_a_worker_is_replaced(answers: list[tuple[float, bool]], now: float, expected: str | None) -> None:
    health = WorkerHealth.starting(0.0)
    for at, serving in answers:
        health.answered(at, serving=serving)
    assert health.failure(now, HUNG_AFTER_S) == expected


def test_the_hung_limit_reaches_the_supervisor() -> None:
    """`WORKER_HUNG_AFTER_S` is uvicorn's `timeout_worker_healthcheck`, which `Supervisor` judges silence by."""
    assert uvicorn_config(load_settings({"WORKER_HUNG_AFTER_S": "7"})).timeout_worker_healthcheck == 7
    assert uvicorn_config(load_settings({})).timeout_worker_healthcheck == 5
