"""Requests httptools cannot parse get the ERROR body with their 400, like every other 4xx, then the connection closes.

uvicorn answers them in plain text ("Invalid HTTP request received."), which a client that reads every
4xx as the ERROR body, the Go client among them, cannot parse. Raw sockets, against the real process.
"""

from __future__ import annotations

import json

import pytest

from tests.support.live_service import LiveService
from tests.support.raw_http import HEALTH, connect, read_response

pytestmark = pytest.mark.live

POST = b"POST /agent/grace/step HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
BODY = b'{"query": "q"}'


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(
            POST + b"Content-Length: 14\r\nTransfer-Encoding: chunked\r\n\r\n" + BODY, id="length-and-chunked"
        ),
        pytest.param(POST + b"Content-Length: 14\r\nContent-Length: 15\r\n\r\n" + BODY, id="two-lengths"),
        pytest.param(POST + b"Content-Length: -14\r\n\r\n" + BODY, id="negative-length"),
        pytest.param(POST + b"Content-Length: 99999999999999999999\r\n\r\n" + BODY, id="twenty-digit-length"),
        pytest.param(POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + BODY + b"\r\n0\r\n\r\n", id="bad-chunk-size"),
        pytest.param(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Bad: a\x7fb\r\n\r\n", id="control-byte-in-a-header"),
    ],
)
def test_unparseable_http_gets_the_error_body(live_service: LiveService, request_bytes: bytes) -> None:
    with connect(live_service) as sock:
        sock.sendall(request_bytes)
        response = read_response(sock)
        assert sock.recv(1) == b""  # closed after the answer
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert b"content-type: application/json" in head.lower()
    payload = json.loads(body)
    assert payload["action"] == "ERROR"
    assert payload["error_type"] == "INVALID_INPUT"
    assert "not valid HTTP/1.1" in payload["message"]
    assert payload["details"] == [{"path": "$", "message": payload["message"]}]
    assert f"x-request-id: {payload['request_id']}\r\n".encode() in head.lower() + b"\r\n"  # one id, both places


def test_the_service_still_answers_afterwards(live_service: LiveService) -> None:
    with connect(live_service) as sock:
        sock.sendall(HEALTH)
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")


THINK = b"POST /agent/librarian/think HTTP/1.1\r\nHost: t\r\n"
THINK_BODY = b'{"request_id": "r", "user_query": "q", "subject_id": "s"}'


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param(b"Content-Type: application/json\r\nContent-Type: text/plain\r\n", 400, id="two-types"),
        pytest.param(b"Content-Type: text/plain\r\nContent-Type: application/json\r\n", 400, id="two-types-reversed"),
        pytest.param(
            b"Content-Type: application/json\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n",
            400,
            id="two-encodings",
        ),
        pytest.param(b"Content-Type: application/json; charset=latin-1\r\n", 415, id="latin-1"),
        pytest.param(b"Content-Type: application/json\r\n", 200, id="once"),
    ],
)
def test_a_header_the_body_is_read_by_counts_once(live_service: LiveService, headers: bytes, status: int) -> None:
    """Given twice, which one is read depends on the reader (uvicorn hands both over; the first used to win)."""
    length = f"Content-Length: {len(THINK_BODY)}\r\n".encode()
    with connect(live_service) as sock:
        sock.sendall(THINK + headers + length + b"\r\n" + THINK_BODY)
        response = read_response(sock)
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
    if status != 200:
        payload = json.loads(body)
        assert (payload["action"], payload["error_type"]) == ("ERROR", "INVALID_INPUT"), payload


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(b"GET /health HTTP/1.1\r\n\r\n", 400, id="http-1.1-without-host"),
        pytest.param(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n", 200, id="http-1.1-with-host"),
        pytest.param(b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, id="two-hosts"),
        pytest.param(b"GET /health HTTP/1.0\r\n\r\n", 200, id="http-1.0-needs-none"),
    ],
)
def test_an_http_1_1_request_without_one_host_is_400(
    live_service: LiveService, request_bytes: bytes, status: int
) -> None:
    with connect(live_service) as sock:
        sock.sendall(request_bytes)
        response = read_response(sock)
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), head
    if status == 400:
        assert b"Host header" in body


@pytest.mark.parametrize(("coding", "status"), [(b"gzip, chunked", 415), (b"chunked", 200)])
def test_a_transfer_coding_besides_chunked_is_415(live_service: LiveService, coding: bytes, status: int) -> None:
    """The server undoes the chunking only: a gzip transfer coding would leave the body compressed when read."""
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(THINK_BODY), THINK_BODY)
    with connect(live_service) as sock:
        sock.sendall(THINK + b"Content-Type: application/json\r\nTransfer-Encoding: " + coding + b"\r\n\r\n" + chunked)
        response = read_response(sock)
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), head
    if status == 415:
        assert b"Transfer-Encoding 'gzip' is not supported" in body
