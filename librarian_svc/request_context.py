"""Per-request context: request id, trace correlation and the access log line.

A raw ASGI middleware (cheaper than Litestar's abstractions on the hot path) that takes the
request id from `X-Request-ID` (or makes one; a header it could not echo as sent is refused with 400
before the app sees the request), binds it and the Cloud Trace id to structlog's
contextvars for every log line of the request, echoes it as a response header and writes one
access line with status and latency. A controller that finds a `request_id` in the body calls
`adopt_request_id` so the body's id wins everywhere.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from litestar.types import ASGIApp, HTTPResponseStartEvent, Message, Receive, ReceiveMessage, Scope, Send

from contracts.base import REQUEST_ID_MAX_CHARS
from contracts.common import ErrorDetail
from librarian_svc.log_setup import trace_field
from librarian_svc.raw_error import error_below_the_app

_STATE_KEY = "librarian_request_id"
_GONE_KEY = "librarian_client_gone"
_ANSWERED_BELOW_KEY = "librarian_answered_below"
CLIENT_CLOSED_REQUEST = 499
"""The access-line status of a request whose client left before the answer (nginx's convention; never sent)."""

access_log = structlog.get_logger("librarian_svc.access")
log = structlog.get_logger(__name__)
_PID = os.getpid()
"""Which worker served the request (WEB_CONCURRENCY > 1). Workers are forked from a fork server that
imported this module (`librarian_svc.worker_preload`): each sets its own after the fork."""


def _note_pid() -> None:
    global _PID
    _PID = os.getpid()


os.register_at_fork(after_in_child=_note_pid)


_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_request_id() -> str:
    """A random version-4 UUID in hex, as `uuid.uuid4().hex` makes, from the process's PRNG instead of the OS.

    A request id only has to be unique, not unpredictable, and `uuid4()` cost 6 µs of every request
    without an `X-Request-ID` (an `os.urandom` system call and a `UUID` object); this costs well under
    one. `random` is seeded from the OS at start and reseeded in forked children, so workers differ.
    """
    return f"{(random.getrandbits(128) & _UUID4_CLEAR) | _UUID4_SET:032x}"


def valid_request_id(value: str) -> bool:
    """What the contract's `RequestId` accepts (`contracts.base.REQUEST_ID_CHARS`): 1-200 visible ASCII characters."""
    return 0 < len(value) <= REQUEST_ID_MAX_CHARS and value.isascii() and value.isprintable() and " " not in value


def current_request_id(scope: Scope | Mapping[str, Any]) -> str:
    """The request id bound to this request (the body's, the header's or a generated one)."""
    holder = scope.get("state", {})
    value = holder.get(_STATE_KEY) if isinstance(holder, dict) else None
    return value if isinstance(value, str) else new_request_id()


def request_id_for(scope: Scope | dict[str, Any], body_id: str | None) -> str:
    """The id a response echoes: the body's `request_id` when it has one, else the header's (or generated) one."""
    return body_id or current_request_id(scope)


def client_gone(scope: Scope | dict[str, Any]) -> bool:
    """True once the server told the app that this request's client disconnected."""
    holder = scope.get("state", {})
    return isinstance(holder, dict) and bool(holder.get(_GONE_KEY))


def answered_below_the_app(scope: Any, status: int) -> None:  # uvicorn's scope type, not Litestar's
    """Record that the connection answered this request itself (a 408 for a body too slow) and closed it.

    The access line then says that status, not the disconnect the app sees next.
    """
    scope.setdefault("state", {})[_ANSWERED_BELOW_KEY] = status


def adopt_request_id(scope: Scope | dict[str, Any], request_id: str) -> None:
    """Make the body's request_id the one echoed in the header and bound to log lines."""
    if valid_request_id(request_id):
        scope.setdefault("state", {})[_STATE_KEY] = request_id
        structlog.contextvars.bind_contextvars(request_id=request_id)


_CONTEXT_HEADERS = frozenset({b"x-request-id", b"traceparent", b"x-cloud-trace-context"})
"""The request headers this middleware reads; the others are not decoded (half of the old cost of a request's start)."""


def _start_request(scope: Scope, google_cloud_project: str | None) -> str | None:
    """Give the request its id (the caller's `X-Request-ID`, else a new one) and bind it, with the trace, to log lines.

    Returns why the caller's `X-Request-ID` cannot be the request's id, if it cannot: the request is then
    refused (400), not run under a generated id the caller would not find in the logs. An HTTP/1.1 request
    without exactly one `Host` is refused too, as the protocol requires (uvicorn passes it on).
    """
    headers: dict[str, str] = {}
    sent_ids: list[str] = []
    hosts = 0
    for name, value in scope["headers"]:
        lowered = name.lower()
        hosts += lowered == b"host"
        if lowered in _CONTEXT_HEADERS:
            text = value.decode("latin-1")
            headers[lowered.decode("latin-1")] = text
            if lowered == b"x-request-id" and (sent := text.strip(" \t")):  # RFC 9110 §5.5: no edge whitespace
                sent_ids.append(sent)  # an empty one names nothing (a client setting it from an empty variable)
    problem = _header_id_problem(sent_ids)
    request_id = sent_ids[0] if sent_ids and problem is None else new_request_id()
    if problem is None and hosts != 1 and scope.get("http_version") == "1.1":
        problem = f"an HTTP/1.1 request carries exactly one Host header (RFC 9112 §3.2); it had {hosts}"
    scope.setdefault("state", {})[_STATE_KEY] = request_id
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=request_id, **trace_field(headers, google_cloud_project))
    return problem


def _header_id_problem(sent: list[str]) -> str | None:
    """Why the `X-Request-ID` headers sent cannot name the request (None when they can, or when none was sent)."""
    if not sent:
        return None
    if len(set(sent)) > 1:
        return f"X-Request-ID was sent {len(sent)} times with different values; send one"
    if not valid_request_id(sent[0]):
        shown = sent[0].encode("latin-1").decode("utf-8", "replace")  # the bytes as the caller likely wrote them
        return (
            f"X-Request-ID must be 1 to {REQUEST_ID_MAX_CHARS} visible ASCII characters without spaces "
            f"(it is echoed as sent); got {len(shown)} characters: {shown[:40]!r}"
        )
    return None


def _refusal(problem: str) -> ASGIApp:
    """An app that answers 400 with the ERROR body in the app's stead (a body, if any, is not read)."""

    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        log.warning("request refused for its X-Request-ID", problem=problem)
        details = [ErrorDetail(path="$", message=problem)]
        headers, body = error_below_the_app(current_request_id(scope), "INVALID_INPUT", problem, details)
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return refuse


def _echo_request_id(start: HTTPResponseStartEvent, scope: Scope) -> None:
    """Set the response's one `X-Request-ID` to the request's id (the body's, once the handler adopted it)."""
    rid = current_request_id(scope).encode("latin-1", "replace")
    raw = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"x-request-id"]
    raw.append((b"x-request-id", rid))
    start["headers"] = raw


def _access_status(scope: Scope, status: int) -> tuple[int, bool]:
    """The access line's status for a request the app answered with `status`, and whether its client left first."""
    below = scope["state"].get(_ANSWERED_BELOW_KEY)
    if below is not None:
        return int(below), False
    gone = client_gone(scope)
    return (CLIENT_CLOSED_REQUEST if gone and status >= 500 else status), gone


def _write_access_line(scope: Scope, status: int, started: float) -> None:
    """The request's one access line (with the status the client saw), then unbind its context."""
    status, gone = _access_status(scope, status)
    access_log.info(
        "request",
        method=scope.get("method"),
        path=scope.get("path"),
        status=status,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
        pid=_PID,
        **({"client_disconnected": True} if gone else {}),
    )
    structlog.contextvars.clear_contextvars()


def _is_last(message: Message) -> bool:
    """Whether `message` ends the response: once the server took it, the client had every byte of the answer."""
    return message["type"] == "http.response.body" and not message.get("more_body", False)


def make_request_context_middleware(google_cloud_project: str | None) -> Callable[[ASGIApp], ASGIApp]:
    """Build the middleware factory Litestar wants, closed over the trace project id."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":  # type: ignore[comparison-overlap]  # lifespan scopes pass too
                await app(scope, receive, send)
                return
            problem = _start_request(scope, google_cloud_project)
            status = 500
            answered = False
            started = time.perf_counter()

            async def receive_watched() -> ReceiveMessage:
                # uvicorn also sends `http.disconnect` once the response is complete, to whoever still listens
                # (Litestar's stream listener always does): only a client that left before the end is gone.
                message = await receive()
                if message["type"] == "http.disconnect" and not answered:
                    scope["state"][_GONE_KEY] = True
                return message

            async def send_with_id(message: Message) -> None:
                nonlocal status, answered
                if message["type"] == "http.response.start":
                    status = message["status"]
                    _echo_request_id(message, scope)
                await send(message)
                answered = answered or _is_last(message)

            try:
                await (app if problem is None else _refusal(problem))(scope, receive_watched, send_with_id)
            finally:
                _write_access_line(scope, status, started)

        return wrapped

    return middleware
