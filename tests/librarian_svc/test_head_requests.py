"""HEAD is answered wherever GET is (RFC 9110 §9.3.2): the GET's status and headers, no body."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from librarian_svc.head_requests import answer_head_as_get
from tests.support.live_service import LiveService
from tests.support.raw_http import connect, read_response


@pytest.mark.parametrize(
    "path", ["/health", "/ready", "/playbooks", "/schema", "/schema/swagger", "/schema/openapi.json"]
)
def test_head_answers_as_get_without_the_body(client: TestClient[Litestar], path: str) -> None:
    got = client.get(path)
    head = client.head(path)
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"] == str(len(got.content))
    assert head.headers["content-type"] == got.headers["content-type"]
    assert len(head.headers["x-request-id"]) == 32


def test_head_of_a_stored_file_is_404_as_its_get_is(client: TestClient[Litestar]) -> None:
    assert client.get("/playbooks/nothing_stored_here").status_code == 404
    head = client.head("/playbooks/nothing_stored_here")
    assert head.status_code == 404
    assert head.content == b""


def test_the_middleware_itself_drops_a_body_even_streamed_under_a_server_that_would_send_it() -> None:
    async def streaming_get(scope: Any, receive: Any, send: Any) -> None:
        assert scope["method"] == "GET"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"6")]})
        await send({"type": "http.response.body", "body": b"abc", "more_body": True})
        await send({"type": "http.response.body", "body": b"def", "more_body": False})

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "HEAD", "path": "/x", "headers": []}
    asyncio.run(answer_head_as_get(streaming_get)(scope, receive, send))  # type: ignore[arg-type]
    assert scope["method"] == "HEAD"  # the server's own scope is left as it was
    assert sent == [
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"6")]},
        {"type": "http.response.body", "body": b"", "more_body": False},
    ]


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/health", {"GET", "HEAD"}),
        ("/agent/librarian/think", {"POST"}),
        ("/playbooks/appworld", {"GET", "HEAD", "PUT"}),  # two handlers on one path (Litestar 2 listed GET alone)
        ("/playbooks", {"GET", "HEAD"}),
    ],
)
def test_options_lists_head_wherever_it_lists_get(client: TestClient[Litestar], path: str, allow: set[str]) -> None:
    response = client.options(path)
    assert response.status_code == 204
    assert {m.strip() for m in response.headers["allow"].split(",")} - {"OPTIONS"} == allow


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        pytest.param("HEAD", "/agent/librarian/think", {"POST"}, id="head-of-a-post-route"),
        pytest.param("POST", "/health", {"GET", "HEAD"}, id="post-to-a-get-route"),
        pytest.param("DELETE", "/playbooks", {"GET", "HEAD"}, id="delete-of-a-get-route"),
    ],
)
def test_a_405_s_allow_names_head_wherever_it_names_get(
    client: TestClient[Litestar], method: str, path: str, allow: set[str]
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    allowed = {m.strip() for m in response.headers["allow"].split(",")} - {"OPTIONS"}
    assert allowed == allow


@pytest.mark.live
def test_the_server_sends_no_body_after_a_head_and_the_connection_goes_on(live_service: LiveService) -> None:
    with connect(live_service) as sock:
        sock.sendall(b"HEAD /health HTTP/1.1\r\nHost: t\r\nX-Request-ID: head-probe-1\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(65536)
            assert chunk, head
            head += chunk
        status_and_headers, _, rest = head.partition(b"\r\n\r\n")
        assert status_and_headers.startswith(b"HTTP/1.1 200"), head
        assert b"content-length: 0" not in status_and_headers.lower()  # the GET's length, as RFC 9110 allows
        assert rest == b""
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")  # a body left over would come first
        assert read_response(sock).startswith(b"HTTP/1.1 200")
    deadline = time.monotonic() + 5
    while '"head-probe-1"' not in live_service.logs() and time.monotonic() < deadline:
        time.sleep(0.05)
    line = next(line for line in live_service.logs().splitlines() if '"head-probe-1"' in line)
    assert '"method":"HEAD"' in line.replace(" ", "")
