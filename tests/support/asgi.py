"""Calling the app in-process: an httpx client, or one raw ASGI request whose messages a test controls."""

from __future__ import annotations

from typing import Any

import httpx
from litestar import Litestar


def asgi_client(app: Litestar, base_url: str = "http://svc") -> httpx.AsyncClient:
    """An `httpx.AsyncClient` whose requests go straight to `app` (no socket, no server process)."""
    # httpx types an ASGI app's scope and messages as plain MutableMappings, Litestar as TypedDicts: the same
    # dicts at run time, but neither callable type is assignable to the other.
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url=base_url)


def post_scope(path: str, body: bytes, **extra: Any) -> dict[str, Any]:
    """The scope uvicorn gives the app for `POST path` with a JSON `body` (plus `extra` keys, e.g. `extensions`).

    For tests (and `bench.step_breakdown`) that send and receive the ASGI messages themselves: what a request
    looks like when the client disconnects, or when a step's CPU is measured without a socket.
    """
    headers = [(b"host", b"svc"), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "state": {},
        **extra,
    }
