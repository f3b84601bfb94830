"""The window of an admitted body: its length, and the hook through which the door opens it.

The hook sits in every request's scope, so it must not keep the request alive: a reference cycle through it
kept each request's scope and body until a garbage collection, which the workers make rare (`startup_gc`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from librarian_svc.body_window import (
    BODY_GRACE_S,
    BODY_WINDOW_EXTENSION,
    BodyWindowHook,
    behind,
    offer,
)
from librarian_svc.http_protocol import ReadTimeoutProtocol
from tests.support.thread_server import ThreadServer


@pytest.mark.parametrize(
    ("received", "elapsed_s", "rate", "is_behind"),
    [
        (0, BODY_GRACE_S, 100_000.0, False),  # nothing yet, within the grace
        (0, BODY_GRACE_S + 0.5, 100_000.0, True),  # nothing after it: a late start is behind at once
        (50_000, BODY_GRACE_S + 0.5, 100_000.0, False),  # exactly the pace
        (49_999, BODY_GRACE_S + 0.5, 100_000.0, True),
        (4_000, 30.0, 100_000.0, True),  # a trickle
        (2_800_000, 30.0, 100_000.0, False),  # at the rate since the grace
    ],
)
def test_a_body_is_behind_once_it_falls_below_the_rate_after_the_grace(
    received: int, elapsed_s: float, rate: float, is_behind: bool
) -> None:
    assert behind(received, elapsed_s, rate) is is_behind


class _Connection:
    def __init__(self) -> None:
        self.opened: list[tuple[int, float]] = []

    def open_body_window(self, cycle: Any, min_bytes_per_s: float) -> None:
        self.opened.append((id(cycle), min_bytes_per_s))


class _Cycle:
    """Stands for uvicorn's request cycle, which holds the scope."""


def test_the_hook_reaches_the_connection_without_keeping_it_or_its_request_alive() -> None:
    connection, cycle = _Connection(), _Cycle()
    scope: dict[str, Any] = {}
    offer(scope, connection, cycle)
    hook = scope["extensions"][BODY_WINDOW_EXTENSION]["open"]
    assert isinstance(hook, BodyWindowHook)
    hook(1_000_000.0)
    assert connection.opened == [(id(cycle), 1_000_000.0)]
    del cycle  # the request ended: reference counting frees it, and the hook does nothing
    hook(1_000_000.0)
    assert len(connection.opened) == 1


@pytest.fixture(name="protocol_server")
def fixture_protocol_server() -> Iterator[ThreadServer]:
    """A bare ASGI app (it reads the body and answers) served with the service's protocol, on a thread."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    server = ThreadServer(app, name="protocol server", http=ReadTimeoutProtocol)
    server.port = server.start("127.0.0.1")  # type: ignore[attr-defined]
    yield server
    server.stop()


def test_a_finished_request_is_freed_without_the_garbage_collector(protocol_server: ThreadServer) -> None:
    """With the collector off, no request cycle outlives its request (one per open connection may remain)."""
    url = f"http://127.0.0.1:{protocol_server.port}/"  # type: ignore[attr-defined]
    gc.collect()
    gc.disable()
    try:
        with httpx.Client() as client:
            for _ in range(20):
                assert client.post(url, content=b"x" * 100_000).status_code == 200
        alive = sum(isinstance(o, RequestResponseCycle) for o in gc.get_objects())
    finally:
        gc.enable()
    assert alive <= 1
