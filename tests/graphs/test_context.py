"""The request context's deadline: CPU work stops when the budget is spent, on the loop or on a thread."""

from __future__ import annotations

import asyncio
import time

import pytest

from graphs.context import AgentContext
from graphs.errors import DeadlineExceeded
from tests.support.context import make_context


def _context(timeout_s: float) -> AgentContext:
    return make_context().for_request(timeout_s=timeout_s)


def test_check_deadline_passes_inside_the_budget() -> None:
    _context(10.0).check_deadline()


def test_check_deadline_raises_a_timeout_once_the_budget_is_spent() -> None:
    context = _context(0.0)
    with pytest.raises(DeadlineExceeded) as caught:
        context.check_deadline()
    assert isinstance(caught.value, TimeoutError)  # the runner maps it to ERROR TIMEOUT


def test_checkpoint_lets_other_tasks_run() -> None:
    async def scenario() -> list[str]:
        context = _context(10.0)
        seen: list[str] = []

        async def other() -> None:
            seen.append("other")

        task = asyncio.create_task(other())
        await context.checkpoint()
        seen.append("after checkpoint")
        await task
        return seen

    assert asyncio.run(scenario()) == ["other", "after checkpoint"]


def test_work_on_a_thread_stops_at_the_deadline() -> None:
    context = _context(0.05)

    def work() -> int:
        chunks = 0
        while True:
            context.check_deadline()
            time.sleep(0.01)
            chunks += 1

    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        asyncio.run(asyncio.to_thread(work))
    assert time.monotonic() - started < 1.0
