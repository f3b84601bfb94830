"""The connection cap against the real process: a flood of connections cannot exhaust descriptors or lock `/health` out.

The worker is started with `MAX_CONNECTIONS_PER_WORKER` small and the read timeout long, so every connection
the test opens stays open unless the cap closes it (issue 15 item 9).
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator

import pytest

from tests.support.live_service import LiveService
from tests.support.raw_http import HEALTH, connect, read_response

pytestmark = [pytest.mark.live, pytest.mark.slow]

CAP = 12
FLOOD = 3 * CAP


@pytest.fixture(name="service", scope="module")
def fixture_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    from tests.support.live_service import start_service

    service = start_service(
        {"MAX_CONNECTIONS_PER_WORKER": str(CAP), "REQUEST_READ_TIMEOUT_S": "60", "KEEPALIVE_TIMEOUT_S": "60"},
        log_dir=tmp_path_factory.mktemp("connection-cap"),
    )
    yield service
    service.stop()


def closed_by_server(socks: list[socket.socket], wait_s: float = 2.0) -> list[socket.socket]:
    """The sockets the server has closed (they turn readable and read as end of stream; nothing else was sent)."""
    closed: list[socket.socket] = []
    deadline = time.monotonic() + wait_s
    pending = list(socks)
    while pending and time.monotonic() < deadline:
        readable, _, _ = select.select(pending, [], [], 0.1)
        for sock in readable:
            assert sock.recv(65536) == b"", "an idle connection was sent something before it was closed"
            closed.append(sock)
            pending.remove(sock)
    return closed


def health(service: LiveService) -> bytes:
    with connect(service) as sock:
        sock.sendall(HEALTH)
        return read_response(sock)


def test_a_flood_of_idle_connections_closes_the_oldest_and_health_still_answers(service: LiveService) -> None:
    flood = [connect(service) for _ in range(FLOOD)]
    try:
        time.sleep(0.5)
        closed = closed_by_server(flood)
        still_open = [sock for sock in flood if sock not in closed]
        assert len(still_open) <= CAP, "more connections open than the cap"
        assert len(closed) >= FLOOD - CAP
        assert flood[0] in closed, "the longest-idle connection is the one closed first"
        answer = health(service)  # over the cap too: it makes room instead of being refused
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        survivor = next(sock for sock in reversed(flood) if sock in still_open)
        survivor.sendall(HEALTH)  # a connection that was kept is a working one
        assert read_response(survivor).startswith(b"HTTP/1.1 200 ")
    finally:
        for sock in flood:
            sock.close()
    assert "Traceback" not in service.logs()
    assert "connection limit reached: closed the longest-idle connection" in service.logs()


def test_when_every_connection_has_a_request_in_flight_a_new_one_gets_503_and_is_closed(
    service: LiveService,
) -> None:
    """Requests whose bodies are still arriving are in flight: none of them is closed to make room."""
    head = (
        b"POST /agent/grace/step HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    busy = [connect(service) for _ in range(CAP)]
    try:
        for sock in busy:
            sock.sendall(head + b'{"query": "')
        time.sleep(0.5)
        with connect(service) as extra:
            refused = read_response(extra)
            assert extra.recv(65536) == b"", "the refused connection is closed after its answer"
        assert refused.startswith(b"HTTP/1.1 503 "), refused
        head_part, _, body = refused.partition(b"\r\n\r\n")
        assert b"retry-after: 1" in head_part.lower()
        error = json.loads(body)
        assert (error["action"], error["error_type"]) == ("ERROR", "OTHER")
        assert "MAX_CONNECTIONS_PER_WORKER" in error["message"]
        assert f"x-request-id: {error['request_id']}\r\n".encode() in head_part.lower() + b"\r\n"
        with connect(service) as again:  # each refusal has an id of its own
            assert json.loads(read_response(again).partition(b"\r\n\r\n")[2])["request_id"] != error["request_id"]
        assert closed_by_server(busy, wait_s=0.5) == [], "a connection with a request in flight was closed"
    finally:
        for sock in busy:
            sock.close()
    deadline = time.monotonic() + 10
    while True:  # the busy requests see their clients leave; the worker serves again
        try:
            if health(service).startswith(b"HTTP/1.1 200 "):
                break
        except AssertionError:
            pass
        assert time.monotonic() < deadline, "the worker did not serve again after the busy connections closed"
        time.sleep(0.1)
    assert "Traceback" not in service.logs()
