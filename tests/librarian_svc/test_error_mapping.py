"""Every client mistake gets the one ERROR body with a 4xx, never a 500 or a stack trace (DESIGN.md §4)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.conftest import AppFactory

THINK = "/agent/librarian/think"
VALID = {"request_id": "r-1", "user_query": "東京タワーの高さは?", "subject_id": "s-1"}


def assert_error_body(body: dict[str, Any], *, status: int, response_status: int) -> None:
    assert response_status == status
    assert body["action"] == "ERROR"
    assert body["error_type"] == "INVALID_INPUT"
    assert isinstance(body["message"], str)
    assert body["message"]
    assert "Traceback" not in body["message"]
    assert isinstance(body["details"], list)


@pytest.mark.parametrize(
    ("content", "status", "path"),
    [
        pytest.param(b"{not json", 400, "$", id="malformed-json"),
        pytest.param(b"\xff\xfe\x00garbage", 400, "$", id="invalid-utf8"),
        pytest.param(b"", 400, "$", id="empty-body"),
        pytest.param(b"[1, 2]", 422, "$", id="array-not-object"),
        pytest.param(b'{"request_id": "r", "subject_id": "s"}', 422, "$", id="missing-user-query"),
        pytest.param(b'{"request_id": "r", "user_query": "", "subject_id": "s"}', 422, "$.user_query", id="empty"),
        pytest.param(b'{"request_id": "r", "user_query": 5, "subject_id": "s"}', 422, "$.user_query", id="wrong-type"),
        pytest.param(
            b'{"request_id": "r", "user_query": "q", "subject_id": "s", '
            b'"search_history": [{"results": [{"snippet": 1}]}]}',
            422,
            "$.search_history[0].results[0]",
            id="nested-path",
        ),
        pytest.param(
            b'{"request_id": "r", "user_query": "q", "subject_id": "s", "constraints": {"max_loops": 99}}',
            422,
            "$.constraints.max_loops",
            id="out-of-range",
        ),
        pytest.param(b'{"request_id": "r", "user_query": "q", "subject_id": "s", "x": NaN}', 400, "$", id="nan"),
    ],
)
def test_bad_bodies_get_structured_4xx(client: TestClient[Litestar], content: bytes, status: int, path: str) -> None:
    response = client.post(THINK, content=content, headers={"content-type": "application/json"})
    body = response.json()
    assert_error_body(body, status=status, response_status=response.status_code)
    assert any(d["path"].startswith(path) for d in body["details"]), body


def test_body_over_the_limit_is_413(make_app: AppFactory) -> None:
    app = make_app({"MAX_BODY_BYTES": "2048"})
    with TestClient(app=app, raise_server_exceptions=False) as client:
        big = {**VALID, "user_query": "あ" * 3000}
        response = client.post(THINK, json=big)
    assert_error_body(response.json(), status=413, response_status=response.status_code)
    assert "2048" in response.json()["message"]


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/nope", 404), ("GET", THINK, 405), ("DELETE", "/health", 405)]
)
def test_unknown_routes_and_methods(client: TestClient[Litestar], method: str, path: str, status: int) -> None:
    response = client.request(method, path)
    assert_error_body(response.json(), status=status, response_status=response.status_code)


def test_request_id_comes_from_the_body_when_it_is_readable(client: TestClient[Litestar]) -> None:
    response = client.post(THINK, json={**VALID, "user_query": ""}, headers={"X-Request-ID": "from-header"})
    assert response.json()["request_id"] == "r-1"
    assert response.headers["x-request-id"] == "r-1"


def test_request_id_falls_back_to_the_header(client: TestClient[Litestar]) -> None:
    response = client.post(THINK, content=b"{oops", headers={"X-Request-ID": "hdr-7"})
    assert response.json()["request_id"] == "hdr-7"
    assert response.headers["x-request-id"] == "hdr-7"


def test_request_id_is_generated_when_absent(client: TestClient[Litestar]) -> None:
    response = client.get("/health")
    assert len(response.headers["x-request-id"]) == 32


def test_success_echoes_the_body_request_id(client: TestClient[Litestar]) -> None:
    response = client.post(THINK, json=VALID, headers={"X-Request-ID": "other"})
    assert response.status_code == 200
    assert response.json()["request_id"] == "r-1"
    assert response.headers["x-request-id"] == "r-1"


def test_an_internal_bug_is_a_bare_500_without_details(make_app: AppFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    async def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr("graphs.librarian.graph.think", explode)  # compiled into the app built below
    app = make_app()
    with TestClient(app=app, raise_server_exceptions=False) as client:
        response = client.post(THINK, json=VALID)
    assert response.status_code == 500
    body = response.json()
    assert body["error_type"] == "OTHER"
    assert body["message"] == "internal error"
    assert "secret" not in response.text
