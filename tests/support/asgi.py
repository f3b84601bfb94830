"""An httpx client that calls the app in-process, for async tests that drive it the way a caller would."""

from __future__ import annotations

import httpx
from litestar import Litestar


def asgi_client(app: Litestar, base_url: str = "http://svc") -> httpx.AsyncClient:
    """An `httpx.AsyncClient` whose requests go straight to `app` (no socket, no server process)."""
    # httpx types an ASGI app's scope and messages as plain MutableMappings, Litestar as TypedDicts: the same
    # dicts at run time, but neither callable type is assignable to the other.
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url=base_url)
