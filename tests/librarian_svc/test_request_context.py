"""The request-context middleware's pieces: generated ids, the headers it reads, and secret redaction on log lines."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import msgspec
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st
from litestar import Litestar
from litestar.types import Message, ReceiveMessage, Scope

from contracts.librarian import LibrarianRequest
from librarian_svc import request_context
from librarian_svc.log_setup import redact_secrets
from librarian_svc.request_context import _start_request, current_request_id, new_request_id, valid_request_id
from tests.support.asgi import post_scope
from tests.support.live_service import LiveService
from tests.support.raw_http import connect, read_response


def test_generated_request_ids_are_distinct_uuid4_hex() -> None:
    ids = [new_request_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids[:50]:
        parsed = uuid.UUID(value)
        assert parsed.hex == value
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def _scope(headers: list[tuple[bytes, bytes]]) -> Scope:
    return {"type": "http", "headers": headers, "state": {}}  # type: ignore[return-value]  # only what it reads


def test_start_request_reads_the_id_and_trace_whatever_the_header_case() -> None:
    trace = "0af7651916cd43dd8448eb211c80319c"
    scope = _scope(
        [
            (b"host", b"x"),
            (b"X-Request-ID", b"from-header"),
            (b"TraceParent", f"00-{trace}-b7ad6b7169203331-01".encode()),
        ]
    )
    _start_request(scope, "p1")
    assert current_request_id(scope) == "from-header"
    bound = structlog.contextvars.get_contextvars()
    assert bound == {"request_id": "from-header", "logging.googleapis.com/trace": f"projects/p1/traces/{trace}"}
    structlog.contextvars.clear_contextvars()


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param([(b"host", b"x")], id="none"),
        pytest.param([(b"x-request-id", b"")], id="empty"),  # e.g. Go's Header.Set from an empty variable
        pytest.param([(b"x-request-id", b" \t ")], id="whitespace-only"),
    ],
)
def test_start_request_generates_an_id_when_no_header_names_one(headers: list[tuple[bytes, bytes]]) -> None:
    scope = _scope(headers)
    assert _start_request(scope, None) is None
    assert uuid.UUID(current_request_id(scope)).version == 4
    assert structlog.contextvars.get_contextvars() == {"request_id": current_request_id(scope)}
    structlog.contextvars.clear_contextvars()


@pytest.mark.parametrize("values", [[b" abc"], [b"abc "], [b"abc\t"], [b"\t abc  "], [b"abc", b" abc "]], ids=str)
def test_whitespace_around_the_header_value_is_not_part_of_the_id(values: list[bytes]) -> None:
    scope = _scope(
        [(b"X-Request-ID", value) for value in values]
    )  # RFC 9110 §5.5; the parser drops the leading part only
    assert _start_request(scope, None) is None
    assert current_request_id(scope) == "abc"
    structlog.contextvars.clear_contextvars()


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        pytest.param([b"bad\x00id"], "1 to 200 visible ASCII", id="control-character"),
        pytest.param([b"two words"], "1 to 200 visible ASCII", id="space"),
        pytest.param(["caf\u00e9".encode()], "got 4 characters: 'caf\u00e9'", id="utf-8-shown-as-sent"),
        pytest.param([b"x" * 201], "got 201 characters", id="too-long"),
        pytest.param([b"a", b"b"], "sent 2 times with different values", id="two-values"),
    ],
)
def test_start_request_names_what_is_wrong_with_the_header_and_runs_nothing_under_it(
    values: list[bytes], problem: str
) -> None:
    scope = _scope([(b"X-Request-ID", value) for value in values])
    found = _start_request(scope, None)
    assert found is not None
    assert problem in found
    assert uuid.UUID(current_request_id(scope)).version == 4  # the 400 carries an id of its own
    structlog.contextvars.clear_contextvars()


@pytest.mark.parametrize("value", ["a", "x" * 200, "0af7651916cd43dd-8448:eb21/1c80_319c", "!~"])
def test_an_id_of_visible_ascii_up_to_200_characters_is_kept_as_sent(value: str) -> None:
    assert valid_request_id(value)
    scope = _scope([(b"x-request-id", value.encode()), (b"x-request-id", value.encode())])  # repeated, same value
    assert _start_request(scope, None) is None
    assert current_request_id(scope) == value
    structlog.contextvars.clear_contextvars()


@given(st.one_of(st.text(max_size=220), st.text(st.characters(max_codepoint=0x7F), max_size=220)))
def test_the_header_rule_and_the_contract_s_request_id_accept_the_same_ids(value: str) -> None:
    decoder = msgspec.json.Decoder(LibrarianRequest)
    body = msgspec.json.encode({"request_id": value, "user_query": "q", "subject_id": "s"})
    try:
        decoder.decode(body)
        contract_accepts = True
    except msgspec.ValidationError:
        contract_accepts = False
    assert valid_request_id(value) == contract_accepts


@pytest.mark.live
def test_two_different_x_request_ids_are_refused_by_the_real_server(live_service: LiveService) -> None:
    with connect(live_service) as sock:  # the real server hands the app both headers, as sent
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Request-ID: a\r\nX-Request-ID: b\r\n\r\n")
        answer = read_response(sock)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"sent 2 times with different values" in answer


@pytest.mark.live
def test_a_refused_request_s_unread_body_does_not_spill_into_the_next_request(live_service: LiveService) -> None:
    body = b'{"request_id": "r", "user_query": "' + b"q" * 100_000 + b'", "subject_id": "s"}'
    head = (
        b"POST /agent/librarian/think HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"X-Request-ID: two words\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with connect(live_service) as sock:
        sock.sendall(head + body)
        first = read_response(sock)
        assert first.startswith(b"HTTP/1.1 400"), first[:300]
        assert b"X-Request-ID must be" in first
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Request-ID: after-refusal\r\n\r\n")
        second = read_response(sock)
    assert second.startswith(b"HTTP/1.1 200"), second[:300]
    assert b"x-request-id: after-refusal" in second.lower()


def test_redaction_passes_a_plain_line_on_and_redacts_secrets_every_time() -> None:
    access = {"event": "request", "method": "POST", "path": "/x", "status": 200, "latency_ms": 0.1, "pid": 1}
    for _ in range(2):  # the second time its keys are known safe
        assert redact_secrets(None, "info", dict(access)) == access
    for _ in range(2):  # a secret key among known-safe ones is still caught
        line = redact_secrets(None, "info", {**access, "OpenAI_API_Key": "sk-1", "signature": b"s"})
        assert line == {**access, "OpenAI_API_Key": "[redacted]", "signature": "[redacted]"}


def test_redaction_passes_a_line_of_lists_on_as_it_is_and_still_catches_secrets() -> None:
    attempt = {"event": "proposal_quality attempt", "attempt": 1, "errors": ["e"], "warnings": [], "ids": ("n1",)}
    redact_secrets(None, "info", dict(attempt))  # learns the keys
    line = dict(attempt)
    assert redact_secrets(None, "info", line) is line  # the fast path: no copy
    with_secret = {**attempt, "api_key": ["sk-1"]}
    assert redact_secrets(None, "info", with_secret) == {**attempt, "api_key": "[redacted]"}


def test_redaction_reaches_nested_mappings_without_touching_the_caller_s_data() -> None:
    headers: dict[str, Any] = {"authorization": "Bearer x", "accept": "*/*", "inner": {"password": "p", 3: "n"}}
    for _ in range(2):
        line = redact_secrets(None, "info", {"event": "call", "headers": headers, "count": 2})
        assert line == {
            "event": "call",
            "headers": {"authorization": "[redacted]", "accept": "*/*", "inner": {"password": "[redacted]", 3: "n"}},
            "count": 2,
        }
    assert headers["authorization"] == "Bearer x"
    assert headers["inner"]["password"] == "p"


class _AccessLines:
    """Stands in for the access logger: keeps each line's fields."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append({"event": event, **fields})


async def _stream_over_asgi(app: Litestar, *, client_stays: bool) -> list[Message]:
    """A GRACE step streamed the way uvicorn drives the app: the body, then `http.disconnect` for every later
    receive, sent once the response is complete (`client_stays`) or as soon as its first event is out."""
    body = msgspec.json.encode({"request_id": "sse-1", "query": "東京タワーの高さは何メートルですか"})
    sent: list[Message] = []
    complete, started = asyncio.Event(), asyncio.Event()
    delivered = False

    async def receive() -> ReceiveMessage:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await (complete if client_stays else started).wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        await asyncio.sleep(0)  # as uvicorn's send may wait for the socket to drain, before it writes (never after)
        sent.append(message)
        if message["type"] == "http.response.body":
            started.set()
            if not message.get("more_body", False):
                complete.set()

    scope = post_scope("/agent/grace/step/stream", body)
    await app(scope, receive, send)  # type: ignore[arg-type]  # the dicts uvicorn sends
    return sent


@pytest.mark.parametrize("client_stays", [True, False], ids=["read-to-the-end", "dropped"])
async def test_only_a_stream_the_client_left_early_is_logged_as_disconnected(
    app: Litestar, monkeypatch: pytest.MonkeyPatch, client_stays: bool
) -> None:
    """uvicorn sends `http.disconnect` after a complete response too, and Litestar's stream listener receives it:
    every fully read stream was logged `client_disconnected`. Only a disconnect before the end counts."""
    access = _AccessLines()
    monkeypatch.setattr(request_context, "access_log", access)
    sent = await _stream_over_asgi(app, client_stays=client_stays)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert (b"event: action" in body) is client_stays
    [line] = access.lines
    assert line["status"] == 200
    assert line.get("client_disconnected", False) is not client_stays
