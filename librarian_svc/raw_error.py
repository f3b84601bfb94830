"""The ERROR body as bytes, for the doors that answer below Litestar (whose exception handlers build the rest).

Three doors answer before a request reaches a route handler: the connection (`http_protocol`: raw bytes
on the socket), the memory door (`memory_budget`: ASGI messages) and the request context (a malformed
`X-Request-ID`). They build their bodies here, so a client reads one ERROR shape whoever answered.
"""

from __future__ import annotations

import msgspec

from contracts.common import ErrorDetail, ErrorResponse, ErrorType


def unavailable(
    request_id: str, error_type: ErrorType, message: str, retry_after_s: int
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and ERROR body of a 503 that asks the caller to send the same request again after a while.

    For the doors that answer before anything of the request was read: the memory door (ASGI messages) and
    the connection cap (`http_protocol`, raw bytes on the socket). Same body and headers from both, so a
    client handles one kind of "retry later".
    """
    headers, body = error_below_the_app(request_id, error_type, message)
    return [*headers, (b"retry-after", str(retry_after_s).encode())], body


def error_below_the_app(
    request_id: str, error_type: ErrorType, message: str, details: list[ErrorDetail] | None = None
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and the ERROR body of an answer given below Litestar (whose exception handlers build the rest)."""
    body = msgspec.json.encode(
        ErrorResponse(request_id=request_id, error_type=error_type, message=message, details=details or [])
    )
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())], body
