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

The door knows when; the connection (`http_protocol`) owns the timer. The connection puts a hook in each
request's ASGI scope (`extensions`, under `BODY_WINDOW_EXTENSION`), and the door calls it with that scope. The
hook is made once per connection and holds it weakly: the scope holds the hook, the connection holds its
request's cycle, and the cycle holds the scope, so a strong reference would make a cycle that keeps every
connection, its last request and the body Litestar caches in its scope alive until a garbage collection,
which the workers make rare on purpose (`startup_gc`). Under another server there is no hook and that
server's own timeouts apply.
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
"""The scope extension the connection provides: `{"open": hook}`, `hook(scope, min_bytes_per_s)`."""


def behind(received: int, elapsed_s: float, min_bytes_per_s: float) -> bool:
    """Has a body fallen behind the minimum rate, with `received` bytes in `elapsed_s`?

    `elapsed_s` is the time since the admission less the worker's own delays.
    """
    return received < min_bytes_per_s * (elapsed_s - BODY_GRACE_S)


class Connection(Protocol):
    """What the hook calls: the connection that times the body of the request whose scope it is given."""

    def open_body_window(self, scope: Any, min_bytes_per_s: float) -> None:
        """Time the rest of the body of the request of `scope` from now (`behind`)."""


class BodyWindowHook:
    """The scope's `open`: one per connection, holding it weakly (see the module docstring)."""

    __slots__ = ("_connection",)

    def __init__(self, connection: Connection) -> None:
        self._connection = weakref.ref(connection)

    def __call__(self, scope: Any, min_bytes_per_s: float) -> None:
        """Pass the rate on, if the connection is still there."""
        connection = self._connection()
        if connection is not None:
            connection.open_body_window(scope, min_bytes_per_s)


def offer(connection: Connection) -> dict[object, object]:  # the type of an ASGI extension's value
    """The extension a connection puts in each of its requests' scopes (made once, when it opens)."""
    return {"open": BodyWindowHook(connection)}


def open_window(scope: Any, min_rate_kb_s: float) -> None:
    """The door admitted this request: time its body from now (when the connection can be told).

    With a rate of 0 the body has a whole read timeout from now: its wait at the door is not its own slowness.
    """
    extension = (scope.get("extensions") or {}).get(BODY_WINDOW_EXTENSION) or {}
    hook = extension.get("open")
    if callable(hook):
        hook(scope, max(0.0, min_rate_kb_s) * 1000)
