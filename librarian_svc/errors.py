"""Map every exception to the one ERROR body of DESIGN.md §4.

Client mistakes become 4xx INVALID_INPUT with JSON paths in `details`: malformed JSON → 400,
schema violations → 422, oversized bodies → 413, unknown routes/methods → 404/405. Anything
else is our bug: logged with its traceback, answered with a bare 500 that reveals nothing.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    HTTP_422_UNPROCESSABLE_ENTITY,
    HTTP_500_INTERNAL_SERVER_ERROR,
)
from litestar.types import ExceptionHandlersMap
from litestar.utils.scope.state import ScopeState

from contracts.common import ErrorDetail, ErrorResponse, ErrorType
from contracts.state import StateToken
from graphs.ace.playbook.store import PlaybookStoreError
from graphs.errors import InvalidInput
from librarian_svc.head_requests import allow_with_head
from librarian_svc.request_context import (
    CLIENT_CLOSED_REQUEST,
    adopt_request_id,
    client_gone,
    current_request_id,
    valid_request_id,
)
from librarian_svc.request_runner import is_json

log = structlog.get_logger(__name__)

_MSGSPEC_PATH = re.compile(r" - at `(\$[^`]*)`$")


class _RequestIdProbe(msgspec.Struct):
    request_id: str | None = None


_probe_decoder = msgspec.json.Decoder(_RequestIdProbe)


def error_response(
    request_id: str,
    error_type: ErrorType,
    message: str,
    status_code: int,
    details: list[ErrorDetail] | None = None,
    state: StateToken | None = None,
    headers: dict[str, str] | None = None,
) -> Response[ErrorResponse]:
    """Build the ERROR body with its status code (the middleware adds `X-Request-ID`)."""
    body = ErrorResponse(
        request_id=request_id, error_type=error_type, message=message, details=details or [], state=state
    )
    return Response(body, status_code=status_code, headers=headers)


def _request_id_for(request: Request[Any, Any, Any]) -> str:
    """The body's request_id when it is a readable JSON body, else the header's (or the generated) one.

    Only a body sent as JSON names the request: a text body (`PUT /playbooks/{dataset}`) that happens to
    parse as JSON with a `request_id` is content, not the caller's id.
    """
    try:
        body = ScopeState.from_scope(request.scope).body  # cached by Litestar once the body was read
        if isinstance(body, bytes) and body and is_json(request.headers.get("content-type", "")):
            probe = _probe_decoder.decode(body)
            if probe.request_id and valid_request_id(probe.request_id):
                adopt_request_id(request.scope, probe.request_id)
                return probe.request_id
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        pass  # best effort: a body we cannot read has no request_id to echo
    return current_request_id(request.scope)


def _validation_details(exc: ValidationException) -> list[ErrorDetail]:
    cause = exc.__cause__
    if isinstance(cause, msgspec.ValidationError):
        text = str(cause)
        match = _MSGSPEC_PATH.search(text)
        path = match.group(1).replace("$.data", "$", 1) if match else "$"
        message = _MSGSPEC_PATH.sub("", text)
        return [ErrorDetail(path=path, message=message)]
    details = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            key = str(item.get("key", ""))
            path = "$" if key in ("", "data") else f"$.{key}"
            details.append(ErrorDetail(path=path, message=str(item.get("message", ""))))
    return details


def handle_validation(request: Request[Any, Any, Any], exc: ValidationException) -> Response[ErrorResponse]:
    """Schema violations in the body → 422; bad query/path parameters → 400."""
    details = _validation_details(exc)
    from_body = isinstance(exc.__cause__, msgspec.ValidationError) or any(
        isinstance(i, dict) and i.get("source") == "body" for i in (exc.extra if isinstance(exc.extra, list) else [])
    )
    status = HTTP_422_UNPROCESSABLE_ENTITY if from_body else HTTP_400_BAD_REQUEST
    if ScopeState.from_scope(request.scope).body == b"":
        status = HTTP_400_BAD_REQUEST
        details = [ErrorDetail(path="$", message="request body is empty; expected a JSON object")]
    summary = "; ".join(f"{d.path}: {d.message}" for d in details) or "request does not match the contract"
    return error_response(_request_id_for(request), "INVALID_INPUT", summary, status, details)


def handle_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[ErrorResponse]:
    """Litestar's own client errors (malformed JSON, 404, 405, 413) in our shape."""
    status = exc.status_code
    if status >= HTTP_500_INTERNAL_SERVER_ERROR and client_gone(request.scope):
        return handle_client_gone(request)
    if status >= HTTP_500_INTERNAL_SERVER_ERROR:
        return handle_unexpected(request, exc)
    detail = exc.detail or "bad request"
    if status == HTTP_413_REQUEST_ENTITY_TOO_LARGE:
        limit = request.route_handler.resolve_request_max_body_size() if request.scope.get("route_handler") else None
        detail = f"request body is over the {limit}-byte limit" if limit else "request body is too large"
    return error_response(
        current_request_id(request.scope) if status == HTTP_413_REQUEST_ENTITY_TOO_LARGE else _request_id_for(request),
        "INVALID_INPUT",
        detail,
        status,
        [ErrorDetail(path="$", message=detail)],
        headers=_with_head_allowed(exc.headers),  # e.g. `Allow` on a 405 (RFC 9110)
    )


def _with_head_allowed(headers: dict[str, str] | None) -> dict[str, str] | None:
    """A 405's `Allow` with HEAD beside GET, as `head_requests` answers HEAD wherever GET is."""
    if not headers:
        return headers
    return {name: allow_with_head(value) if name.lower() == "allow" else value for name, value in headers.items()}


def handle_bad_encoding(request: Request[Any, Any, Any], exc: UnicodeDecodeError) -> Response[ErrorResponse]:
    """Invalid UTF-8 inside the JSON body (msgspec raises this rather than a DecodeError)."""
    return _unreadable_body(request, f"request body is not valid UTF-8 (byte {exc.start})")


def handle_too_deep(request: Request[Any, Any, Any], exc: RecursionError) -> Response[ErrorResponse]:
    """JSON nested deeper than the decoder will follow (msgspec stops instead of overflowing the stack)."""
    return _unreadable_body(request, "request body is nested too deeply")


def _unreadable_body(request: Request[Any, Any, Any], message: str) -> Response[ErrorResponse]:
    """A body the decoder could not read at all: 400 INVALID_INPUT naming why, with no path to point at."""
    return error_response(
        current_request_id(request.scope),
        "INVALID_INPUT",
        message,
        HTTP_400_BAD_REQUEST,
        [ErrorDetail(message=message)],
    )


def handle_invalid_input(request: Request[Any, Any, Any], exc: InvalidInput) -> Response[ErrorResponse]:
    """Contract violations an agent or the state codec found after decoding."""
    return error_response(_request_id_for(request), "INVALID_INPUT", exc.message, exc.status_code, exc.details)


def handle_playbook_store(request: Request[Any, Any, Any], exc: PlaybookStoreError) -> Response[ErrorResponse]:
    """A stored playbook that cannot be read or written: the server's problem (500), named, never a traceback."""
    log.error("playbook store failure", reason=str(exc), path=request.url.path)
    return error_response(_request_id_for(request), "OTHER", str(exc), HTTP_500_INTERNAL_SERVER_ERROR)


def handle_client_gone(request: Request[Any, Any, Any]) -> Response[ErrorResponse]:
    """The client left mid-request (Litestar raises a 500 for a body cut short): an event, not a bug.

    Logged once at INFO, no traceback; the answer is never delivered, and the access line says 499.
    """
    log.info("client disconnected before the request was read", path=request.url.path)
    return error_response(
        current_request_id(request.scope), "INVALID_INPUT", "client disconnected", CLIENT_CLOSED_REQUEST
    )


def handle_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorResponse]:
    """A bug: log the traceback, tell the client nothing about internals."""
    log.error("unhandled exception", exc_info=exc, path=request.url.path)
    return error_response(_request_id_for(request), "OTHER", "internal error", HTTP_500_INTERNAL_SERVER_ERROR)


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    ValidationException: handle_validation,
    InvalidInput: handle_invalid_input,
    PlaybookStoreError: handle_playbook_store,
    UnicodeDecodeError: handle_bad_encoding,
    RecursionError: handle_too_deep,
    HTTPException: handle_http,
    Exception: handle_unexpected,
}
