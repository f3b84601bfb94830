"""Admission by working memory: heavy requests wait their turn within their deadline; light ones never wait."""

from __future__ import annotations

import asyncio

import pytest
from litestar.testing import TestClient

from librarian_svc.app import create_app
from librarian_svc.memory_budget import EXEMPT_MB, MemoryBudget
from librarian_svc.services import build_services
from librarian_svc.settings import load_settings


async def _hold(budget: MemoryBudget, need: float, log: list[str], name: str, release: asyncio.Event) -> str:
    async def work() -> str:
        log.append(f"start {name}")
        await release.wait()
        log.append(f"end {name}")
        return name

    return await budget.run(need, work)


async def test_light_requests_never_wait() -> None:
    budget = MemoryBudget(10)
    release = asyncio.Event()
    log: list[str] = []
    heavy = asyncio.create_task(_hold(budget, 10, log, "heavy", release))
    await asyncio.sleep(0)
    light = asyncio.create_task(_hold(budget, EXEMPT_MB / 2, log, "light", asyncio.Event()))
    await asyncio.sleep(0)
    assert log == ["start heavy", "start light"]
    light.cancel()
    release.set()
    assert await heavy == "heavy"


async def test_heavy_requests_run_while_they_fit_then_in_arrival_order() -> None:
    budget = MemoryBudget(10)
    gates = {name: asyncio.Event() for name in "abcd"}
    log: list[str] = []
    needs = {"a": 6, "b": 4, "c": 5, "d": 2}
    tasks = {}
    for name in "abcd":
        tasks[name] = asyncio.create_task(_hold(budget, needs[name], log, name, gates[name]))
        await asyncio.sleep(0)
    assert log == ["start a", "start b"]  # 6 + 4 fit; c (5) waits, and d (2) waits behind it: first come first served
    assert budget.in_use_mb == 10
    gates["a"].set()
    await tasks["a"]
    await asyncio.sleep(0)
    assert log[-2:] == ["end a", "start c"]  # 4 + 5 fit; d (2) would make 11
    gates["b"].set()
    await tasks["b"]
    await asyncio.sleep(0)
    assert log[-2:] == ["end b", "start d"]
    for name in "cd":
        gates[name].set()
    await asyncio.gather(*tasks.values())
    assert budget.in_use_mb == 0


async def test_a_request_larger_than_the_budget_runs_alone() -> None:
    budget = MemoryBudget(10)
    release = asyncio.Event()
    log: list[str] = []
    big = asyncio.create_task(_hold(budget, 500, log, "big", release))
    await asyncio.sleep(0)
    other = asyncio.create_task(_hold(budget, 2, log, "other", asyncio.Event()))
    await asyncio.sleep(0)
    assert log == ["start big"]
    release.set()
    await big
    await asyncio.sleep(0)
    assert log[-1] == "start other"
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await other
    assert budget.in_use_mb == 0


async def test_a_waiter_whose_deadline_passes_gives_its_place_up() -> None:
    budget = MemoryBudget(10)
    release = asyncio.Event()
    log: list[str] = []
    holder = asyncio.create_task(_hold(budget, 8, log, "holder", release))
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await _hold(budget, 5, log, "late", asyncio.Event())
    behind = asyncio.create_task(_hold(budget, 2, log, "behind", asyncio.Event()))
    await asyncio.sleep(0)
    assert "start late" not in log
    assert log[-1] == "start behind"  # the timed-out waiter left the queue: 8 + 2 fit
    release.set()
    await holder
    behind.cancel()
    with pytest.raises(asyncio.CancelledError):
        await behind
    assert budget.in_use_mb == 0


def _ace_search_body(timeout_ms: int) -> dict[str, object]:
    bullets = [{"id": f"g-{i}", "section": "general", "content": f"lesson {i} " + "x" * 400} for i in range(200)]
    return {
        "query": {"query_text": "lesson", "top_k": 5},
        "playbook": {"bullets": bullets},
        "constraints": {"timeout_ms": timeout_ms},
    }


def test_a_heavy_request_that_cannot_be_admitted_in_time_answers_timeout() -> None:
    """The wait for memory is inside the request's deadline: a TIMEOUT body, never a hang or a 5xx."""
    services = build_services(load_settings({"WORKER_MEMORY_BUDGET_MB": "16"}))
    app = create_app(services.settings, services=services)
    with TestClient(app) as client:
        services.memory.in_use_mb = services.memory.capacity_mb  # as if heavy requests held all of it
        waited = client.post("/agent/ace/search", json=_ace_search_body(300)).json()
        services.memory.in_use_mb = 0
        served = client.post("/agent/ace/search", json=_ace_search_body(5_000)).json()
    assert waited["action"] == "ERROR"
    assert waited["error_type"] == "TIMEOUT"
    assert served["action"] == "RESULTS"
    assert services.memory.in_use_mb == 0
