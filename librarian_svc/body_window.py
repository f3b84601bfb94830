"""How long a heavy request's body may take once it holds worker memory, and how the door tells the connection.

A heavy request holds its estimate of the worker's memory budget from its admission at the door
(`memory_budget`), before its body is read. Without a limit of its own, one client declaring the largest
body and sending it slowly held the whole budget for the read timeout (30 s, longer than the 25 s the
requests queued behind it may wait), and every other heavy request of that worker got the 503. So an
admitted body has `BODY_GRACE_S` plus its size at `MIN_BODY_RATE_KB_S` (a body without a length counts at
`MAX_BODY_BYTES`), never more than the read timeout.

The door knows the size and the moment; the connection (`http_protocol`) owns the timer. The connection puts
a hook in the ASGI scope's `extensions` under `BODY_WINDOW_EXTENSION`, and the door calls it. The hook holds
weak references only: the scope holds the hook, and a hook holding the connection's request cycle, which
holds the scope, would keep every request's scope (and the body Litestar caches in it) alive until a
garbage collection, which the workers make rare on purpose (`startup_gc`). Under another server there is no
hook and that server's own timeouts apply.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Protocol

BODY_GRACE_S = 2.0
"""What an admitted body has on top of its size at `MIN_BODY_RATE_KB_S`: the connection's start (TCP's slow
start, a proxy's first bytes), so that a small heavy body is not cut off for a round trip's delay."""

BODY_WINDOW_EXTENSION = "librarian.body_window"
"""The scope extension the connection provides: `{"open": hook}`, `hook(window_s, min_bytes_per_s)`."""


class Connection(Protocol):
    """What the hook calls: the connection that times the body of its request `cycle`."""

    def open_body_window(self, cycle: Any, window_s: float, min_bytes_per_s: float) -> None:
        """Time the rest of `cycle`'s body: `window_s` from now, then at least `min_bytes_per_s`."""


class BodyWindowHook:
    """The scope's `open`: the connection and the request it was made for, weakly (see the module docstring)."""

    __slots__ = ("_connection", "_cycle")

    def __init__(self, connection: Connection, cycle: object) -> None:
        self._connection = weakref.ref(connection)
        self._cycle = weakref.ref(cycle)

    def __call__(self, window_s: float, min_bytes_per_s: float) -> None:
        """Pass the window on, if the connection and its request are still there."""
        connection, cycle = self._connection(), self._cycle()
        if connection is not None and cycle is not None:
            connection.open_body_window(cycle, window_s, min_bytes_per_s)


def offer(scope: Any, connection: Connection, cycle: object) -> None:
    """Let the door give this request's body its window (the connection calls this once the head is in).

    `scope` is uvicorn's (a TypedDict, so not a `MutableMapping` to the type checker).
    """
    scope.setdefault("extensions", {})[BODY_WINDOW_EXTENSION] = {"open": BodyWindowHook(connection, cycle)}


def body_window_s(size: int, min_rate_kb_s: float) -> float:
    """How long an admitted body of `size` bytes may take to arrive (infinite when no rate is set)."""
    if min_rate_kb_s <= 0:
        return math.inf
    return BODY_GRACE_S + size / (min_rate_kb_s * 1000)


def open_window(scope: Any, size: int, min_rate_kb_s: float) -> None:
    """The door admitted this request: its body has its window from now (when the connection can be told)."""
    extension = (scope.get("extensions") or {}).get(BODY_WINDOW_EXTENSION) or {}
    hook = extension.get("open")
    if callable(hook):
        hook(body_window_s(size, min_rate_kb_s), max(0.0, min_rate_kb_s) * 1000)
