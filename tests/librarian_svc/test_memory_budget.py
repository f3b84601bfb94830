"""Admission by working memory: heavy requests wait their turn within their deadline; light ones never wait."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient, TestClient

from librarian_svc import memory_budget
from librarian_svc.app import create_app
from librarian_svc.body_window import BODY_WINDOW_EXTENSION
from librarian_svc.memory_budget import EXEMPT_MB, MemoryBudget, body_bytes
from librarian_svc.services import Services, build_services
from librarian_svc.settings import load_settings
from tests.support.asgi import post_scope


async def _hold(budget: MemoryBudget, need: float, log: list[str], name: str, release: asyncio.Event) -> str:
    """A request as the door runs it: reserve, work until released, give back (whatever happens)."""
    held = await budget.reserve(need)
    try:
        log.append(f"start {name}")
        await release.wait()
        log.append(f"end {name}")
        return name
    finally:
        budget.release(held)


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


def _heavy_app(**env: str) -> tuple[Litestar, Services]:
    services = build_services(load_settings({"WORKER_MEMORY_BUDGET_MB": "16", **env}))
    return create_app(services.settings, services=services), services


def test_the_estimate_starts_from_the_declared_length() -> None:
    assert body_bytes([(b"content-length", b"50000")], 1_000_000) == 50_000
    assert body_bytes([(b"Transfer-Encoding", b"chunked")], 1_000_000) == 1_000_000  # no length: the cap
    assert body_bytes([(b"content-length", b"2000000")], 1_000_000) == 0  # a 413 holds nothing
    assert body_bytes([(b"content-length", b"12x")], 1_000_000) == 0  # refused by the server
    assert body_bytes([], 1_000_000) == 0


class _Exchange:
    """One request sent straight into the ASGI app on the test's own event loop (the budget is loop-bound)."""

    def __init__(self, app: Litestar, body: bytes, *, extensions: dict[str, Any] | None = None) -> None:
        self.body = body
        self.reads = 0
        self.sent: list[Any] = []
        scope = post_scope("/agent/ace/search", body, extensions=extensions or {})
        self.task = asyncio.create_task(app(scope, self._receive, self._send))  # type: ignore[arg-type]

    async def _receive(self) -> dict[str, Any]:
        self.reads += 1
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def _send(self, message: Any) -> None:
        self.sent.append(message)

    async def answer(self) -> tuple[int, Any]:
        await asyncio.wait_for(self.task, 20)
        return self.sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in self.sent[1:]))


async def test_a_heavy_request_waits_at_the_door_with_its_body_unread() -> None:
    """While the budget is full, the handler has not asked for a byte of the body; once memory frees, it runs."""
    app, services = _heavy_app()
    async with AsyncTestClient(app):  # runs the lifespan (the app is started as in serving)
        holder = await services.memory.reserve(services.memory.capacity_mb)
        exchange = _Exchange(app, json.dumps(_ace_search_body(5_000)).encode())
        await asyncio.sleep(0.3)
        assert exchange.reads == 0, "the body was read before the request was admitted"
        assert services.memory.waiting == 1
        services.memory.release(holder)
        status, body = await exchange.answer()
    assert exchange.reads > 0
    assert (status, body["action"]) == (200, "RESULTS")
    assert services.memory.in_use_mb == 0


async def test_the_door_has_an_admitted_body_timed_before_reading_it() -> None:
    """The connection is told the body's window when the request gets its memory, before the body is read;
    a light request holds none, so it is left to the read timeout."""
    app, _ = _heavy_app(MIN_BODY_RATE_KB_S="50")
    heavy = json.dumps(_ace_search_body(5_000)).encode()
    light = json.dumps({"query": {"query_text": "x"}, "playbook": {"bullets": []}}).encode()
    windows: list[tuple[str, float, int]] = []  # (which, its rate in bytes/s, body reads made before the call)
    exchanges: list[_Exchange] = []
    async with AsyncTestClient(app):
        for name, body in (("heavy", heavy), ("light", light)):
            hook = {BODY_WINDOW_EXTENSION: {"open": lambda _, r, n=name: windows.append((n, r, exchanges[-1].reads))}}
            exchanges.append(_Exchange(app, body, extensions=hook))
            assert (await exchanges[-1].answer())[0] == 200
        assert (await _Exchange(app, heavy).answer())[0] == 200  # served under a server without the hook
    assert windows == [("heavy", 50_000.0, 0)]


def test_a_heavy_request_that_cannot_be_admitted_in_time_gets_a_503_with_retry_after() -> None:
    """Past the server's budget at the door: 503, Retry-After and the ERROR body; nothing was read or run."""
    app, services = _heavy_app(REQUEST_TIMEOUT_MS="300")
    with TestClient(app) as client:
        services.memory.in_use_mb = services.memory.capacity_mb  # as if heavy requests held all of it
        waited = client.post("/agent/ace/search", json=_ace_search_body(300), headers={"x-request-id": "door-1"})
        light = client.post("/agent/ace/search", json={"query": {"query_text": "x"}, "playbook": {"bullets": []}})
        services.memory.in_use_mb = 0
        served = client.post("/agent/ace/search", json=_ace_search_body(300))
    assert waited.status_code == 503
    assert waited.headers["retry-after"] == "2"
    error = waited.json()
    assert error["action"] == "ERROR"
    assert error["error_type"] == "TIMEOUT"
    assert error["request_id"] == "door-1"
    assert "WORKER_MEMORY_BUDGET_MB" in error["message"]
    assert light.status_code == 200  # a light request never waits, even with the budget full
    assert served.json()["action"] == "RESULTS"
    assert services.memory.in_use_mb == 0


async def test_the_wait_at_the_door_counts_against_the_requests_own_deadline() -> None:
    """Admitted after its own timeout_ms has passed: ERROR TIMEOUT (HTTP 200) at once, not a fresh budget."""
    app, services = _heavy_app()
    async with AsyncTestClient(app):
        holder = await services.memory.reserve(services.memory.capacity_mb)
        late = _Exchange(app, json.dumps(_ace_search_body(200)).encode())
        await asyncio.sleep(0.5)
        services.memory.release(holder)
        status, body = await late.answer()
    assert (status, body["action"], body["error_type"]) == (200, "ERROR", "TIMEOUT")
    assert "waiting for the worker's memory" in body["message"]
    assert services.memory.in_use_mb == 0


async def test_after_heavy_requests_the_allocator_gives_its_free_pages_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """`malloc_trim` once the heavy requests finished since the last trim reach `TRIM_EVERY_MB`, after the
    response of the one that reaches it; light requests never count nor pay for it."""
    trims: list[int] = []
    monkeypatch.setattr(memory_budget, "MALLOC_TRIM", trims.append)
    app, services = _heavy_app()
    body = json.dumps(_ace_search_body(5_000)).encode()
    each_mb = len(body) * 100 / 1_000_000  # ACE's factor
    monkeypatch.setattr(memory_budget, "TRIM_EVERY_MB", 2.5 * each_mb)  # the third one reaches it
    before_trim = 2
    async with AsyncTestClient(app):
        light = _Exchange(app, json.dumps({"query": {"query_text": "x"}, "playbook": {"bullets": []}}).encode())
        assert (await light.answer())[0] == 200
        for _ in range(before_trim):
            assert (await _Exchange(app, body).answer())[0] == 200
        await asyncio.sleep(0.05)
        assert trims == [], "trimmed before TRIM_EVERY_MB of heavy requests had finished"
        assert (await _Exchange(app, body).answer())[0] == 200
        for _ in range(100):  # the trim runs on a worker thread
            if trims:
                break
            await asyncio.sleep(0.01)
    assert trims == [0]
    assert services.memory.in_use_mb == 0
