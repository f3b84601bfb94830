"""uvicorn's httptools protocol plus a read timeout: a request must arrive whole within `REQUEST_READ_TIMEOUT_S`.

uvicorn times only the idle gap after a response (`timeout_keep_alive`). A connection that never
sends a byte, or sends half a request line, a few header bytes at a time, or a body that stalls,
stays open for ever (a "slowloris"): 20,000 such sockets exhausted the descriptor limit. Go's
`http.Server.ReadTimeout` is the model here: a window that opens when the connection is accepted
(for its first request) or when the next request's first byte arrives after a response (the idle
gap in between stays `KEEPALIVE_TIMEOUT_S`), and closes once the whole request, body included,
has been read. When it runs out the connection is closed: with a 408 if the request's head never
arrived, silently if the body stalled (the step, waiting for its body, sees the client disconnect).
A request waiting for memory at the door (`memory_budget`) has its body unread on purpose: its window
starts again while it waits, and once admitted its body gets a whole window from the moment of admission,
so only the client's own slowness, once admitted, counts.

Timeouts alone do not bound how many connections are open: a burst of more idle or half-sent
connections than the descriptor limit within the read timeout exhausted the worker's descriptors, and
then `accept` failed for everyone, `/health` included. So each worker holds at most
`MAX_CONNECTIONS_PER_WORKER`. A connection over the cap makes room by closing the connection that has
been idle longest (between requests, or with a request head still incomplete: nothing of the
application is running for it), so a flood of idle sockets cannot keep a real request, or the
liveness probe, out. Only when every open connection has a request in flight is the new one refused:
a 503 with the ERROR body and `Retry-After`, then closed. (uvicorn's `limit_concurrency` answers 503
only once a request head arrives, on a connection it has already accepted and keeps: it caps work,
not descriptors, and it evicts nobody, so a flood of idle sockets would shut real requests out.)
"""

from __future__ import annotations

import asyncio
import resource
import uuid
from collections import OrderedDict
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from contracts.common import ErrorDetail
from librarian_svc.memory_budget import admitted_at, error_below_the_app, unavailable, waiting_for_admission

log = structlog.get_logger(__name__)

_settings: dict[str, float] = {"read_timeout_s": 30.0, "max_connections": 1000}

_idle: OrderedDict[ReadTimeoutProtocol, None] = OrderedDict()
"""This worker's connections with no request in flight, the longest idle first (eviction order)."""

_counts = {"evicted": 0, "refused": 0}
REFUSAL_LOG_EVERY = 100
"""Under a flood, one log line per this many closed or refused connections (and the first)."""


def configure(read_timeout_s: float, max_connections: int = 1000) -> None:
    """Set the read timeout and the connection cap for connections accepted from now on (each worker)."""
    _settings["read_timeout_s"] = read_timeout_s
    _settings["max_connections"] = max_connections


DESCRIPTORS_SPARE = 256
"""Descriptors a worker keeps for everything but client connections: the model client's pool, files, pipes."""


def raise_descriptor_limit() -> int:
    """Raise this process's soft descriptor limit to the hard one (the soft default is often 1,024); the new soft limit.

    asyncio uses epoll, which has no descriptor ceiling of its own, so nothing is gained by the lower
    soft limit; the hard limit stays the operator's.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = 1 << 20  # what "no limit" counts as
    target = unlimited if hard == resource.RLIM_INFINITY else hard
    if soft == resource.RLIM_INFINITY or soft >= target:
        return unlimited if soft == resource.RLIM_INFINITY else soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # a sandbox refused: keep what there is
        return soft
    return target


def connection_cap(configured: int, descriptor_limit: int) -> int:
    """`MAX_CONNECTIONS_PER_WORKER`, lowered if needed so the cap is reached before the descriptors run out."""
    return max(1, min(configured, descriptor_limit - DESCRIPTORS_SPARE))


def _closing_response(status: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """A whole HTTP/1.1 response, written on the socket below the app, after which the connection closes."""
    head = b"".join(name + b": " + value + b"\r\n" for name, value in [*headers, (b"connection", b"close")])
    return b"HTTP/1.1 " + status + b"\r\n" + head + b"\r\n" + body


def _refusal(retry_after_s: int) -> bytes:
    headers, body = unavailable(
        uuid.uuid4().hex,
        "OTHER",
        "the worker's connection limit (MAX_CONNECTIONS_PER_WORKER) is reached and every connection "
        "has a request in flight; send the request again after Retry-After",
        retry_after_s,
    )
    return _closing_response(b"503 Service Unavailable", headers, body)


REFUSED_503 = _refusal(1)


def invalid_request(status: bytes, message: str, default_headers: list[tuple[bytes, bytes]] | None = None) -> bytes:
    """The ERROR body (INVALID_INPUT) for a request the protocol refuses before the app sees it: 400 or 408.

    uvicorn answers those in plain text; a client that parses every 4xx as the ERROR body (the Go
    client does) would fail on it.
    """
    details = [ErrorDetail(path="$", message=message)]
    headers, body = error_below_the_app(uuid.uuid4().hex, "INVALID_INPUT", message, details)
    return _closing_response(status, [*(default_headers or []), *headers], body)


NOT_HTTP = (
    "the request is not valid HTTP/1.1 (its request line, a header, Content-Length or the chunked "
    "encoding); the connection is closed"
)
NOT_IN_TIME = "request not received in good time (REQUEST_READ_TIMEOUT_S); the connection is closed"


def _count(kind: str, **fields: Any) -> None:
    _counts[kind] += 1
    if _counts[kind] % REFUSAL_LOG_EVERY == 1:
        log.warning(
            "connection limit reached: " + ("closed the longest-idle connection" if kind == "evicted" else "refused"),
            total=_counts[kind],
            max_connections=int(_settings["max_connections"]),
            **fields,
        )


class ReadTimeoutProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` whose requests must be read within the read timeout (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timeout_s = _settings["read_timeout_s"]
        self._read_timer: asyncio.TimerHandle | None = None
        self._bytes_in_window = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Accepted: within the cap (see the module docstring), and the first request must arrive in time too."""
        super().connection_made(transport)
        if len(self.connections) > _settings["max_connections"] and not self._make_room():
            return
        _idle[self] = None
        self._open_window()

    def _make_room(self) -> bool:
        """Close the longest-idle connection; with none idle, refuse this one (False)."""
        if _idle:
            victim, _ = _idle.popitem(last=False)
            _count("evicted", open=len(self.connections))
            victim._close_window()
            victim.transport.close()
            return True
        _count("refused", open=len(self.connections))
        self.transport.write(REFUSED_503)
        self.transport.close()
        return False

    def on_headers_complete(self) -> None:
        """A request is in flight: this connection is no longer one to close for room."""
        super().on_headers_complete()
        _idle.pop(self, None)

    def on_response_complete(self) -> None:
        """Answered, with no pipelined request behind it: idle again, the most recently."""
        super().on_response_complete()
        if not self.transport.is_closing() and self._between_requests():
            _idle[self] = None

    def data_received(self, data: bytes) -> None:
        """A request's first byte opens its window; the last byte of its body closes it."""
        if self._read_timer is None and self._between_requests():
            self._open_window()
        self._bytes_in_window += len(data)
        super().data_received(data)
        if self._read_timer is not None and self._request_read():
            self._close_window()

    def connection_lost(self, exc: Exception | None) -> None:
        """Gone: no timer may outlive the connection, and it no longer counts as idle."""
        _idle.pop(self, None)
        self._close_window()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request httptools cannot parse (two Content-Lengths, a bad chunk size, …): the ERROR body, then close.

        `msg` is uvicorn's own text ("Invalid HTTP request received."), which uvicorn has already logged.
        """
        response = invalid_request(b"400 Bad Request", NOT_HTTP, list(self.server_state.default_headers))
        self.transport.write(response)
        self.transport.close()

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _request_read(self) -> bool:
        """The current request's head and whole body are in (its response may still be under way)."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body

    def _open_window(self) -> None:
        self._close_window()
        self._bytes_in_window = 0
        self._read_timer = self.loop.call_later(self._read_timeout_s, self._read_timed_out)

    def _close_window(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        scope = self.cycle.scope if self.cycle is not None else None
        if scope is not None and waiting_for_admission(scope):
            self._open_window()  # its body is unread on purpose: the window starts again once it may read
            return
        since = admitted_at(scope) if scope is not None else None
        if since is not None and (left := since + self._read_timeout_s - self.loop.time()) > 0:
            # Admitted during this window: the body gets a whole window from its admission, not what was left.
            self._read_timer = self.loop.call_later(left, self._read_timed_out)
            return
        head_missing = self._between_requests()
        log.info(
            "closed a connection: request not read in time",
            phase="head" if head_missing else "body",
            bytes_received=self._bytes_in_window,
            read_timeout_s=self._read_timeout_s,
            client=f"{self.client[0]}:{self.client[1]}" if self.client else None,
        )
        if head_missing and self._bytes_in_window:
            self.transport.write(
                invalid_request(b"408 Request Timeout", NOT_IN_TIME, list(self.server_state.default_headers))
            )
        self.transport.close()
