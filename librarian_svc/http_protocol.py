"""uvicorn's httptools protocol plus a read timeout: a request must arrive whole within `REQUEST_READ_TIMEOUT_S`.

uvicorn times only the idle gap after a response (`timeout_keep_alive`). A connection that never
sends a byte, or sends half a request line, a few header bytes at a time, or a body that stalls,
stays open for ever (a "slowloris"): 20,000 such sockets exhausted the descriptor limit. Go's
`http.Server.ReadTimeout` is the model here: a window that opens when the connection is accepted
(for its first request) or when the next request's first byte arrives after a response (the idle
gap in between stays `KEEPALIVE_TIMEOUT_S`), and closes once the whole request, body included,
has been read. When it runs out the connection is answered 408 with the ERROR body (when a request
had begun; a connection that sent nothing is just closed); a step waiting for its body sees the client
disconnect.
A request waiting for memory at the door (`memory_budget`) has its body unread on purpose: its window
starts again while it waits. Once admitted it holds worker memory, and the door has its body timed from
that moment by a stricter rule (`body_window`): it must keep pace with `MIN_BODY_RATE_KB_S`, looked at
every `CHECK_EVERY_S`, with the worker's own delays not held against it, and never past the read timeout
from the admission; a body that falls behind is answered 408 with the ERROR body. A request's window ends
with its answer: a pipelined request's runs from its turn, and a next request on the connection gets its
own from its first byte.

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
from collections import OrderedDict
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from contracts.common import ErrorDetail
from librarian_svc import body_window
from librarian_svc.memory_budget import waiting_for_admission
from librarian_svc.raw_error import error_below_the_app, unavailable
from librarian_svc.request_context import answered_below_the_app, current_request_id, new_request_id

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


def refused_503(retry_after_s: int = 1) -> bytes:
    """The 503 for a connection over the cap, with an id of its own in the body and `X-Request-ID`, as every answer."""
    request_id = new_request_id()
    headers, body = unavailable(
        request_id,
        "OTHER",
        "the worker's connection limit (MAX_CONNECTIONS_PER_WORKER) is reached and every connection "
        "has a request in flight; send the request again after Retry-After",
        retry_after_s,
    )
    return _closing_response(b"503 Service Unavailable", [*headers, (b"x-request-id", request_id.encode())], body)


def invalid_request(
    status: bytes, message: str, default_headers: list[tuple[bytes, bytes]] | None = None, request_id: str = ""
) -> bytes:
    """The ERROR body (INVALID_INPUT) for a request the protocol refuses or cuts off below the app: 400 or 408.

    uvicorn answers those in plain text; a client that parses every 4xx as the ERROR body (the Go
    client does) would fail on it.
    """
    details = [ErrorDetail(path="$", message=message)]
    request_id = request_id or new_request_id()  # the request's own id when it got one, as the app's answers
    headers, body = error_below_the_app(request_id, "INVALID_INPUT", message, details)
    headers.append((b"x-request-id", request_id.encode("latin-1", "replace")))
    return _closing_response(status, [*(default_headers or []), *headers], body)


NOT_HTTP = (
    "the request is not valid HTTP/1.1 (its request line, a header, Content-Length or the chunked "
    "encoding); the connection is closed"
)
NOT_IN_TIME = "request not received in good time (REQUEST_READ_TIMEOUT_S); the connection is closed"
RECHECK_S = 0.5
"""How often to look again at a pipelined request's window while the request ahead of it runs."""
BODY_TOO_SLOW = (
    "request body arrived too slowly: {received} bytes of it by {elapsed:.1f} s after its admission; a request that "
    "holds worker memory (WORKER_MEMORY_BUDGET_MB) must send its body at MIN_BODY_RATE_KB_S or faster after its "
    "first {grace:g} s; nothing of it was run: the connection is closed"
)


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
        self._window_opened = 0.0
        self._head_begun = False
        """A request's first byte has arrived since the last answer (its head may be incomplete)."""
        self._rest_of_answered_body = False
        """The current request was answered before its whole body came; the rest is thrown away as it comes."""
        self._min_bytes_per_s = 0.0
        """The rate the door gave the current request's body (`open_body_window`); 0: the read timeout alone."""
        self._body_received = 0
        self._not_the_clients_s = 0.0
        """Since the admission: the time this worker could not read the body (`body_window`)."""
        self._look_due = 0.0
        self._body_window = body_window.offer(self)

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
        self.transport.write(refused_503())
        self.transport.close()
        return False

    def on_message_begin(self) -> None:
        """A new request's first byte: after an answer it gets a window of its own (see the module docstring)."""
        if self.cycle is not None and self.cycle.response_complete:
            self._open_window()
        self._head_begun = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        """A request is in flight: this connection is no longer one to close for room; the door may time its body."""
        super().on_headers_complete()
        _idle.pop(self, None)
        self._head_begun, self._body_received = False, 0
        self.scope.setdefault("extensions", {})[body_window.BODY_WINDOW_EXTENSION] = self._body_window

    def on_body(self, body: bytes) -> None:
        """Count the body's own bytes (chunk framing is not body): what the rate of an admitted body counts."""
        self._body_received += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        """A body's last byte: after an early answer, the connection is idle again, on the keep-alive timeout.

        A request answered before its body was read (a 400 or 404 that did not need it) has the rest of its body
        thrown away as it arrives. Once it is in, the connection waits for a next request under the keep-alive
        timeout (uvicorn cancelled it when that rest began to arrive), not under the read window that rest opened.
        """
        answered = self.cycle is not None and self.cycle.response_complete
        super().on_message_complete()
        if not answered or self.transport.is_closing():
            return
        self._rest_of_answered_body = False
        self._close_window()  # idle since its answer (`on_response_complete`), in `_idle` already
        self._unset_keepalive_if_required()
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def on_response_complete(self) -> None:
        """Answered: the answered request's window ends here; idle again, or the next request's turn."""
        super().on_response_complete()
        self._close_window()
        cycle = self.cycle  # the answered request's, unless a pipelined one is parsed (and then not complete)
        self._rest_of_answered_body = cycle is not None and cycle.response_complete and cycle.more_body
        if self.transport.is_closing():
            return
        if self._between_requests():
            _idle[self] = None
            if self._head_begun:
                self._open_window()  # a head begun while the answered request ran: its time starts now
        elif not self._request_read():
            self._open_window()  # the pipelined request now running, its body still to come

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

    def open_body_window(self, scope: Any, min_bytes_per_s: float) -> None:
        """Time the rest of the body of `scope`'s request from now: by its rate (`body_window`), or the read timeout.

        Called by the door when it admits the request; a request already read, or no longer this connection's
        current one, is left alone.
        """
        if self.cycle is None or self.cycle.scope is not scope or self.transport.is_closing() or self._request_read():
            return
        if min_bytes_per_s <= 0:  # no rate: a whole read timeout from its admission
            self._open_window()
            return
        self._close_window()
        self._window_opened = self._look_due = self.loop.time()
        self._min_bytes_per_s, self._not_the_clients_s = min_bytes_per_s, 0.0
        self._look_again_later()

    def _body_keeps_pace(self) -> bool:
        """At a look at an admitted body: does it keep pace with its rate (the worker's own delays taken out)?"""
        now = self.loop.time()
        self._not_the_clients_s += max(0.0, now - self._look_due)  # the event loop was held: nothing was read
        if self.flow.read_paused:  # read, not yet taken by the app: the worker is the one behind
            self._not_the_clients_s += body_window.CHECK_EVERY_S
        if now - self._window_opened >= self._read_timeout_s:
            return False
        elapsed = now - self._window_opened - self._not_the_clients_s
        return not body_window.behind(self._body_received, elapsed, self._min_bytes_per_s)

    def _look_again_later(self) -> None:
        """The next look at an admitted body: in `CHECK_EVERY_S`, or when the read timeout from its admission ends."""
        now = self.loop.time()
        delay = max(0.0, min(body_window.CHECK_EVERY_S, self._window_opened + self._read_timeout_s - now))
        self._look_due = now + delay
        self._read_timer = self.loop.call_later(delay, self._read_timed_out)

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _request_read(self) -> bool:
        """The current request's head and whole body are in (its response may still be under way)."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body

    def _open_window(self) -> None:
        self._close_window()
        self._bytes_in_window = 0
        self._window_opened = self.loop.time()
        self._min_bytes_per_s = 0.0
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
        if self.pipeline:  # a queued request's time starts with its turn (`on_response_complete`)
            self._read_timer = self.loop.call_later(RECHECK_S, self._read_timed_out)
            return
        head_missing = self._between_requests()
        timed_by_rate = not head_missing and self._min_bytes_per_s > 0
        if timed_by_rate and self._body_keeps_pace():
            self._look_again_later()
            return
        elapsed = self.loop.time() - self._window_opened
        too_slow = timed_by_rate and elapsed < self._read_timeout_s
        log.info(
            "closed a connection: request not read in time",
            phase="rest of an answered body" if self._rest_of_answered_body else "head" if head_missing else "body",
            bytes_received=self._bytes_in_window,
            read_timeout_s=self._read_timeout_s,
            body_too_slow=too_slow,
            client=f"{self.client[0]}:{self.client[1]}" if self.client else None,
        )
        headers = list(self.server_state.default_headers)
        if head_missing and self._head_begun:
            self.transport.write(invalid_request(b"408 Request Timeout", NOT_IN_TIME, headers))
        elif scope is not None and self.cycle is not None and not self.cycle.response_started:
            message = (
                BODY_TOO_SLOW.format(received=self._body_received, elapsed=elapsed, grace=body_window.BODY_GRACE_S)
                if too_slow
                else NOT_IN_TIME
            )
            self.transport.write(invalid_request(b"408 Request Timeout", message, headers, current_request_id(scope)))
            answered_below_the_app(scope, 408)
        self.transport.close()
