"""Connections as an unlucky or hostile client leaves them, against the real process, with raw sockets.

Idle, half-sent ("slowloris") and abandoned connections must not stay open past their timeouts, and a
client that disconnects mid-upload is an INFO line, not a traceback and a status-500 access line
(issue 15 items 7 and 9). Timeouts are shortened through the environment so the test runs in seconds.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.live_service import LiveService
from tests.support.raw_http import HEALTH, connect, read_response

pytestmark = [pytest.mark.live, pytest.mark.slow]

READ_TIMEOUT_S = 1.0
KEEPALIVE_S = 2
SLACK_S = 1.5  # scheduling on a busy machine


@pytest.fixture(name="service", scope="module")
def fixture_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    from tests.support.live_service import start_service

    service = start_service(
        {"REQUEST_READ_TIMEOUT_S": str(READ_TIMEOUT_S), "KEEPALIVE_TIMEOUT_S": str(KEEPALIVE_S)},
        log_dir=tmp_path_factory.mktemp("connections"),
    )
    yield service
    service.stop()


def closed_after(sock: socket.socket) -> tuple[float, bytes]:
    """Seconds until the server closes the connection, and everything it sent before."""
    started = time.monotonic()
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return time.monotonic() - started, received


def log_lines(service: LiveService) -> list[dict[str, Any]]:
    return [json.loads(line) for line in service.logs().splitlines() if line.startswith("{")]


def wait_for_log(service: LiveService, condition: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(condition(line) for line in log_lines(service)):
            return True
        time.sleep(0.05)
    return False


def test_a_connection_that_never_sends_is_closed_after_the_read_timeout(service: LiveService) -> None:
    with connect(service) as sock:
        after, received = closed_after(sock)
    assert READ_TIMEOUT_S - 0.2 <= after <= READ_TIMEOUT_S + SLACK_S
    assert received == b""


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off_with_408(service: LiveService) -> None:
    """Slowloris: bytes keep coming, but the head never completes; the window does not restart per byte."""
    head = b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 200
    with connect(service) as sock:
        started = time.monotonic()
        try:
            for byte in head:
                sock.sendall(bytes([byte]))
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        _, received = closed_after(sock)
        total = time.monotonic() - started
    assert total <= READ_TIMEOUT_S + SLACK_S, total
    assert received.startswith(b"HTTP/1.1 408 "), received
    payload = json.loads(received.partition(b"\r\n\r\n")[2])
    assert (payload["action"], payload["error_type"]) == ("ERROR", "INVALID_INPUT")
    assert "REQUEST_READ_TIMEOUT_S" in payload["message"]


def test_a_stalled_body_is_cut_off_with_408_and_logged_as_one(service: LiveService) -> None:
    body = json.dumps({"request_id": "stalled-body", "query": "x" * 100}).encode()
    head = (
        b"POST /agent/grace/step HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"X-Request-ID: stalled-1\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with connect(service) as sock:
        sock.sendall(head + body[:20])
        after, received = closed_after(sock)
    assert after <= READ_TIMEOUT_S + SLACK_S
    assert received.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), received[:200]
    assert b"\r\nx-request-id: stalled-1\r\n" in received
    error = json.loads(received.partition(b"\r\n\r\n")[2])
    assert (error["action"], error["error_type"], error["request_id"]) == ("ERROR", "INVALID_INPUT", "stalled-1")
    assert "REQUEST_READ_TIMEOUT_S" in error["message"]
    assert wait_for_log(service, lambda line: line.get("request_id") == "stalled-1" and "status" in line)
    access = [line for line in log_lines(service) if line.get("request_id") == "stalled-1" and "status" in line]
    assert [(line["status"], "client_disconnected" in line) for line in access] == [(408, False)]
    assert "Traceback" not in service.logs()


def test_a_client_that_disconnects_mid_upload_is_an_info_line_without_traceback(service: LiveService) -> None:
    request_id = "gone-mid-upload"
    head = (
        b"POST /agent/grace/step HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"X-Request-ID: " + request_id.encode() + b"\r\nContent-Length: 100000\r\n\r\n"
    )
    with connect(service) as sock:
        sock.sendall(head + b'{"request_id": "gone-mid-upload", "query": "')
        time.sleep(0.2)
    assert wait_for_log(service, lambda line: line.get("request_id") == request_id and "status" in line)
    mine = [line for line in log_lines(service) if line.get("request_id") == request_id]
    access = [line for line in mine if "status" in line]
    assert [line["status"] for line in access] == [499]
    assert access[0]["client_disconnected"] is True
    assert {line["severity"] for line in mine} == {"INFO"}, mine
    assert any("client disconnected" in line["message"] for line in mine)
    assert "Traceback" not in service.logs()


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(service: LiveService) -> None:
    with connect(service) as sock:
        sock.sendall(HEALTH)
        first = read_response(sock)
        assert first.startswith(b"HTTP/1.1 200 "), first
        after, received = closed_after(sock)
    assert KEEPALIVE_S - 0.2 <= after <= KEEPALIVE_S + SLACK_S
    assert received == b""


@pytest.mark.parametrize(
    ("target", "extra_header", "status"),
    [
        pytest.param(b"/nope", b"", b"404", id="unknown-path"),
        pytest.param(b"/agent/librarian/think", b"X-Request-ID: two words\r\n", b"400", id="refused-request-id"),
    ],
)
def test_after_an_answer_given_before_the_body_the_connection_waits_on_the_keep_alive_timeout(
    service: LiveService, target: bytes, extra_header: bytes, status: bytes
) -> None:
    """The rest of the body is thrown away as it comes; then the connection is idle, not a request late to arrive."""
    body = b'{"x": "' + b"y" * 1990 + b'"}'
    head = b"POST " + target + b" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" + extra_header
    with connect(service) as sock:
        sock.sendall(head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:1000])
        answer = read_response(sock)
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
        sock.sendall(body[1000:])
        after, received = closed_after(sock)
    assert KEEPALIVE_S - 0.2 <= after <= KEEPALIVE_S + SLACK_S, after  # not the 1 s read timeout
    assert received == b""
    lines = log_lines(service)
    assert not any(line.get("phase") == "head" and line.get("bytes_received", 0) >= 900 for line in lines)


def test_the_rest_of_an_answered_body_must_still_come_within_the_read_timeout(service: LiveService) -> None:
    head = b"POST /nope HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
    with connect(service) as sock:
        sock.sendall(head + b"{" * 100)
        assert read_response(sock).startswith(b"HTTP/1.1 404"), "answered before its body was read"
        sock.sendall(b"{" * 100)  # then nothing more
        after, received = closed_after(sock)
    assert READ_TIMEOUT_S - 0.2 <= after <= READ_TIMEOUT_S + SLACK_S, after
    assert received == b""
    assert wait_for_log(service, lambda line: line.get("phase") == "rest of an answered body")


def test_a_slow_but_complete_request_within_the_window_is_served(service: LiveService) -> None:
    """The timeout bounds a request's arrival, not ordinary pauses: a request sent in pieces in time gets its answer."""
    with connect(service) as sock:
        time.sleep(READ_TIMEOUT_S / 4)
        for piece in (HEALTH[:10], HEALTH[10:20], HEALTH[20:]):
            sock.sendall(piece)
            time.sleep(READ_TIMEOUT_S / 8)
        response = read_response(sock)
        assert response.startswith(b"HTTP/1.1 200 "), response
        # the next request on the same connection gets a fresh window after the idle gap
        time.sleep(READ_TIMEOUT_S * 1.2)
        sock.sendall(HEALTH)
        again = read_response(sock)
    assert again.startswith(b"HTTP/1.1 200 "), again
