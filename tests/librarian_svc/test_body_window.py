"""The window of an admitted body: its length, and the hook through which the door opens it.

The hook sits in every request's scope, so it must not keep the request alive: a reference cycle through it
kept each request's scope and body until a garbage collection, which the workers make rare (`startup_gc`).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from librarian_svc.body_window import BODY_GRACE_S, BODY_WINDOW_EXTENSION, BodyWindowHook, behind, offer, open_window
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
        self.opened: list[tuple[object, float]] = []

    def open_body_window(self, scope: Any, min_bytes_per_s: float) -> None:
        self.opened.append((scope, min_bytes_per_s))


def test_the_hook_reaches_its_connection_without_keeping_it_alive() -> None:
    connection = _Connection()
    extension = offer(connection)
    scope: dict[str, Any] = {"extensions": {BODY_WINDOW_EXTENSION: extension}}
    hook = extension["open"]
    assert isinstance(hook, BodyWindowHook)
    open_window(scope, 1_000.0)  # the door's call, in KB/s
    assert connection.opened == [(scope, 1_000_000.0)]
    opened = connection.opened
    del connection  # the connection closed: reference counting frees it, and the hook does nothing
    hook(scope, 1_000_000.0)
    assert len(opened) == 1


@pytest.fixture(name="protocol_url")
def fixture_protocol_url() -> Iterator[str]:
    """A bare ASGI app (it reads the body and answers) served with the service's protocol, on a thread."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    server = ThreadServer(app, name="protocol server", http=ReadTimeoutProtocol)
    yield f"http://127.0.0.1:{server.start('127.0.0.1')}/"
    server.stop()


def _alive(kind: type) -> int:
    return sum(isinstance(o, kind) for o in gc.get_objects())


def test_closed_connections_and_their_requests_are_freed_without_the_garbage_collector(protocol_url: str) -> None:
    """With the collector off, no connection nor request outlives its closing (each request on a connection of
    its own): a reference cycle through the scope's hook would keep every one of them."""
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            with httpx.Client() as client:
                assert client.post(protocol_url, content=b"x" * 100_000).status_code == 200
        deadline = time.monotonic() + 5.0
        while (_alive(ReadTimeoutProtocol) or _alive(RequestResponseCycle)) and time.monotonic() < deadline:
            time.sleep(0.05)  # the server's thread lets each closed connection go
        alive = (_alive(ReadTimeoutProtocol), _alive(RequestResponseCycle))
    finally:
        gc.enable()
    assert alive == (0, 0)
