"""The drain, in process: a shutdown moves every step's deadline (awaiting or CPU-bound) to the shutdown deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from graphs.errors import DeadlineExceeded
from librarian_svc import drain
from librarian_svc.settings import load_settings
from librarian_svc.workers import exit_within_s, uvicorn_config
from tests.support.context import make_context


@pytest.fixture(autouse=True)
def fresh_drain() -> Iterator[None]:
    drain.reset()
    yield
    drain.reset()


def test_check_deadline_stops_cpu_work_at_the_shutdown_deadline() -> None:
    context = make_context().for_request(timeout_s=60.0)
    context.check_deadline()  # a minute left
    drain.begin(grace_s=drain.RESPONSE_MARGIN_S)  # answer at once
    assert context.remaining_s() == 0.0
    with pytest.raises(DeadlineExceeded):
        context.check_deadline()


def test_a_shorter_own_deadline_still_wins() -> None:
    context = make_context().for_request(timeout_s=0.5)
    drain.begin(grace_s=30.0)
    remaining = context.remaining_s()
    assert remaining is not None
    assert remaining <= 0.5


async def test_a_step_awaiting_the_model_times_out_at_the_shutdown_deadline() -> None:
    """The `asyncio.timeout` of a step in flight is moved earlier; its own (long) budget no longer counts."""
    loop = asyncio.get_running_loop()
    started = time.monotonic()

    async def step() -> None:
        async with asyncio.timeout(60.0) as timer:
            with drain.bounded(timer):
                await asyncio.sleep(60.0)

    task = asyncio.create_task(step())
    await asyncio.sleep(0.05)
    drain.begin(grace_s=drain.RESPONSE_MARGIN_S + 0.2, loop=loop)
    with pytest.raises(TimeoutError):
        await task
    assert time.monotonic() - started < 2.0
    assert drain.is_draining()


async def test_a_step_that_starts_during_the_drain_gets_only_what_is_left() -> None:
    drain.begin(grace_s=drain.RESPONSE_MARGIN_S + 0.1, loop=asyncio.get_running_loop())
    started = time.monotonic()

    async def step() -> None:
        async with asyncio.timeout(60.0) as timer:
            with drain.bounded(timer):
                await asyncio.sleep(60.0)

    with pytest.raises(TimeoutError):
        await step()
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("grace", [0.0, 0.4, 1.0, 2.0, 7.3, 8.0, 8.2, 8.9, 60.0])
def test_the_uvicorn_timeout_never_cuts_before_the_answers_nor_adds_to_the_grace(grace: float) -> None:
    """Rounded up, 8.2 s became 9 s, and the watchdog and the supervisor's deadline moved with it."""
    assert drain.uvicorn_grace_s(grace) == max(grace, 1.0)
    settings = load_settings({"SHUTDOWN_GRACE_S": str(grace)})
    assert uvicorn_config(settings).timeout_graceful_shutdown == max(grace, 1.0)


@pytest.mark.parametrize(
    ("grace", "workers", "exit_within"),
    [
        (0.0, 1, 1.5),
        (0.0, 2, 2.1),
        (8.0, 1, 8.5),
        (8.0, 2, 9.1),  # the default: README's figure
        (8.2, 2, 9.3),  # 10.1 s before (9 s of uvicorn timeout + 1 s + the tick)
        (8.9, 2, 10.0),  # the most Cloud Run's 10 s allow
        (8.9, 64, 10.0),
        (60.0, 2, 61.1),
    ],
)
def test_the_process_exits_within_the_grace_and_its_fixed_margins(
    grace: float, workers: int, exit_within: float
) -> None:
    """The bound README's table states: `max(SHUTDOWN_GRACE_S, 1)` + 1.1 s with several workers, + 0.5 s with one."""
    assert exit_within_s(grace, workers) == pytest.approx(exit_within)
    if grace <= 8.9:
        assert exit_within_s(grace, workers) <= 10.0 + 1e-9  # Cloud Run's SIGTERM → SIGKILL
