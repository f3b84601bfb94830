"""How fast a heavy request's body must come once it holds worker memory, and how the door tells the connection.

A heavy request holds its estimate of the worker's memory budget from its admission at the door
(`memory_budget`), before its body is read. Without a rule of its own, one client declaring the largest
body and sending it slowly held the whole budget for the read timeout (30 s, longer than the 25 s the
requests queued behind it may wait), and every other heavy request of that worker got the 503.

So from its admission the body must keep pace with `MIN_BODY_RATE_KB_S`: the body bytes received (counted
from its head; not the bytes on the wire: chunk framing does not count) must never fall behind that rate
times the time since the admission less `BODY_GRACE_S` and less the worker's own delays (`behind`). The
connection looks every `CHECK_EVERY_S`. A body that keeps pace arrives by `BODY_GRACE_S` plus its size at
the rate; one that falls behind is cut off at the first look after it does, whether it trickles, pauses or
starts late: by `BODY_GRACE_S` plus what it sent, at the rate. The time the worker itself could not read is
not held against the client: how late a look comes (the event loop was held, and TCP held the client back
meanwhile), and the `CHECK_EVERY_S` before a look at which the app had not yet taken what was read (uvicorn
stops reading then). Nothing goes past the read timeout from the admission.

The door knows when; the connection (`http_protocol`) owns the timer. The connection puts a hook in the ASGI
scope's `extensions` under `BODY_WINDOW_EXTENSION`, and the door calls it. The hook holds weak references
only: the scope holds the hook, and a hook holding the connection's request cycle, which holds the scope,
would keep every request's scope (and the body Litestar caches in it) alive until a garbage collection, which
the workers make rare on purpose (`startup_gc`). Under another server there is no hook and that server's own
timeouts apply.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol

BODY_GRACE_S = 2.0
"""Time an admitted body has before the rate applies: the connection's start (TCP's slow start, a proxy's first
bytes), so that a small heavy body is not cut off for a round trip's delay."""

CHECK_EVERY_S = 0.5
"""How often the connection looks at an admitted body's progress."""

BODY_WINDOW_EXTENSION = "librarian.body_window"
"""The scope extension the connection provides: `{"open": hook}`, `hook(min_bytes_per_s)`."""


def behind(received: int, elapsed_s: float, min_bytes_per_s: float) -> bool:
    """Has a body fallen behind the minimum rate, with `received` bytes in `elapsed_s`?

    `elapsed_s` is the time since the admission less the worker's own delays.
    """
    return received < min_bytes_per_s * (elapsed_s - BODY_GRACE_S)


class Connection(Protocol):
    """What the hook calls: the connection that times the body of its request `cycle`."""

    def open_body_window(self, cycle: Any, min_bytes_per_s: float) -> None:
        """Time the rest of `cycle`'s body from now: it must keep pace with `min_bytes_per_s` (`behind`)."""


class BodyWindowHook:
    """The scope's `open`: the connection and the request it was made for, weakly (see the module docstring)."""

    __slots__ = ("_connection", "_cycle")

    def __init__(self, connection: Connection, cycle: object) -> None:
        self._connection = weakref.ref(connection)
        self._cycle = weakref.ref(cycle)

    def __call__(self, min_bytes_per_s: float) -> None:
        """Pass the rate on, if the connection and its request are still there."""
        connection, cycle = self._connection(), self._cycle()
        if connection is not None and cycle is not None:
            connection.open_body_window(cycle, min_bytes_per_s)


def offer(scope: Any, connection: Connection, cycle: object) -> None:
    """Let the door give this request's body its window (the connection calls this once the head is in).

    `scope` is uvicorn's (a TypedDict, so not a `MutableMapping` to the type checker).
    """
    scope.setdefault("extensions", {})[BODY_WINDOW_EXTENSION] = {"open": BodyWindowHook(connection, cycle)}


def open_window(scope: Any, min_rate_kb_s: float) -> None:
    """The door admitted this request: time its body from now (when the connection can be told).

    With a rate of 0 the body has a whole read timeout from now: its wait at the door is not its own slowness.
    """
    extension = (scope.get("extensions") or {}).get(BODY_WINDOW_EXTENSION) or {}
    hook = extension.get("open")
    if callable(hook):
        hook(max(0.0, min_rate_kb_s) * 1000)
