"""Every client mistake gets the one ERROR body with a 4xx, never a 500 or a stack trace (DESIGN.md §4)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from librarian_svc.request_runner import SPEC_KEY
from tests.conftest import AppFactory

THINK = "/agent/librarian/think"
VALIDATE = "/api/proposal-quality/validate"
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


@pytest.mark.parametrize(
    ("headers", "shown"),
    [
        pytest.param([(b"X-Request-ID", b"two words")], "'two words'", id="space"),
        pytest.param([(b"X-Request-ID", b"x" * 201)], "got 201 characters", id="too-long"),
        pytest.param([(b"X-Request-ID", "\u00e9t\u00e9".encode())], "got 3 characters: '\u00e9t\u00e9'", id="utf-8"),
    ],
)
def test_an_x_request_id_the_header_cannot_echo_is_refused_before_anything_runs(
    client: TestClient[Litestar], headers: list[tuple[bytes, bytes]], shown: str
) -> None:
    response = client.post(THINK, json=VALID, headers=headers)
    body = response.json()
    assert_error_body(body, status=400, response_status=response.status_code)
    assert "X-Request-ID" in body["message"]
    assert shown in body["message"]
    assert body["request_id"] == response.headers["x-request-id"]
    assert len(body["request_id"]) == 32  # its own id: neither the header's nor the body's (the body is not read)


@pytest.mark.parametrize("request_id", ["two words", "caf\u00e9", "new\nline", "tab\there"])
def test_a_body_request_id_the_header_cannot_echo_is_422_at_its_path(
    client: TestClient[Litestar], request_id: str
) -> None:
    response = client.post(THINK, json={**VALID, "request_id": request_id}, headers={"X-Request-ID": "hdr-1"})
    body = response.json()
    assert_error_body(body, status=422, response_status=response.status_code)
    assert [d["path"] for d in body["details"]] == ["$.request_id"]
    assert "visible ASCII characters without spaces" in body["details"][0]["message"]  # the rule in words
    assert body["request_id"] == response.headers["x-request-id"] == "hdr-1"


def test_a_text_body_that_parses_as_json_does_not_name_the_request(client: TestClient[Litestar]) -> None:
    response = client.put(
        "/playbooks/id_probe",
        content=b'{"request_id": "from-the-text"}',
        headers={"Content-Type": "text/plain", "X-Request-ID": "put-1"},
    )
    assert response.status_code == 400  # not the official text format
    assert response.json()["request_id"] == response.headers["x-request-id"] == "put-1"


@pytest.mark.parametrize(
    ("path", "body", "status", "where"),
    [
        pytest.param(THINK, {**VALID, "user_query": "   "}, 422, "$.user_query", id="librarian-spaces"),
        pytest.param(THINK, {**VALID, "user_query": "\u200b"}, 422, "$.user_query", id="librarian-zero-width"),
        pytest.param(THINK, {**VALID, "subject_id": "\u3000"}, 422, "$.subject_id", id="librarian-subject"),
        pytest.param(
            "/agent/ace/search",
            {"query": {"query_text": "\t"}, "playbook": {"bullets": []}},
            422,
            "$.query.query_text",
            id="ace-search",
        ),
        pytest.param("/agent/ace/generate", {"query": " ", "playbook": {"bullets": []}}, 422, "$.query", id="generate"),
        pytest.param(
            "/workflow/run",
            {"query": "x", "dataset": "default", "ground_truth": " "},
            422,
            "$.ground_truth",
            id="truth",
        ),
        pytest.param("/workflow/run", {"query": "x", "dataset": "default", "save": True}, 422, "$.save", id="save"),
        pytest.param("/agent/grace/step", {"request_id": "g", "query": "\u200b"}, 400, "$.query", id="grace"),
    ],
)
def test_blank_text_is_refused_at_its_path_not_answered(
    client: TestClient[Litestar], path: str, body: dict[str, Any], status: int, where: str
) -> None:
    response = client.post(path, json=body)
    assert_error_body(response.json(), status=status, response_status=response.status_code)
    assert [d["path"] for d in response.json()["details"]] == [where]


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


def _json_routes(app: Litestar) -> list[str]:
    """Every operation whose request is a JSON body."""
    return sorted(
        route.path
        for route in app.routes
        for handler in getattr(route, "route_handlers", [])
        if SPEC_KEY in handler.opt and handler.opt[SPEC_KEY].body == "json"
    )


@pytest.mark.parametrize(
    ("content", "paths"),
    [
        pytest.param(
            b'{"request_id": "r", "user_query": "A", "user_query": "B", "subject_id": "s"}',
            ["$.user_query"],
            id="top-level",
        ),
        pytest.param(
            b'{"request_id": "r", "user_query": "q", "subject_id": "s", '
            b'"constraints": {"max_loops": 1, "max_loops": 2}}',
            ["$.constraints.max_loops"],
            id="nested",
        ),
        pytest.param(
            b'{"request_id": "r", "user_query": "q", "subject_id": "s", "search_history": [{"results": '
            b'[{"document_id": "d1", "snippet": "s", "document_id": "d2"}]}]}',
            ["$.search_history[0].results[0].document_id"],
            id="in-a-hit",
        ),
        pytest.param(
            b'{"request_id": "r", "request_\\u0069d": "r2", "user_query": "q", "subject_id": "s"}',
            ["$.request_id"],
            id="escaped-spelling",
        ),
    ],
)
def test_a_key_given_twice_is_422_at_its_path(client: TestClient[Litestar], content: bytes, paths: list[str]) -> None:
    response = client.post(THINK, content=content, headers={"content-type": "application/json"})
    body = response.json()
    assert_error_body(body, status=422, response_status=response.status_code)
    assert [d["path"] for d in body["details"]] == paths
    assert "more than once" in body["message"]


REFLECTION = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "default"}
DECODABLE: dict[str, str] = {
    "/agent/librarian/think": '"request_id": "r", "user_query": "q", "subject_id": "s"',
    "/agent/ace/curate": f'"playbook": {{}}, "reflection": {json.dumps(REFLECTION)}',
    "/agent/ace/generate": '"playbook": {}, "query": "q"',
    "/agent/ace/reflect": '"playbook": {}, "trajectory": {"query": "q"}',
    "/agent/ace/search": '"playbook": {}, "query": {"query_text": "q"}',
    "/workflow/run": '"query": "q"',
    "/agent/grace/step": '"query": "q"',
    "/agent/grace/step/stream": '"query": "q"',
    "/api/advisor/run": '"dashboard": {"trays": {}}',
    "/api/organizer/run": '"dashboard": {"trays": {}}',
    "/api/proposal-quality/validate": '"kind": "organizer", "report": {}',
}
"""The fields of the smallest body each JSON operation's contract type decodes (the agent may refuse it later)."""


def test_every_json_operation_refuses_a_repeated_key(app: Litestar, client: TestClient[Litestar]) -> None:
    """A body the contract decodes, but for its first key given twice: 422 at that key on every operation."""
    assert set(DECODABLE) == set(_json_routes(app))
    for route, fields in DECODABLE.items():
        first = fields.split(",", 1)[0]
        body = "{" + first + ", " + fields + "}"
        response = client.post(route, content=body.encode(), headers={"content-type": "application/json"})
        answer = response.json()
        assert_error_body(answer, status=422, response_status=response.status_code)
        key = json.loads("{" + first + "}").popitem()[0]
        assert [d["path"] for d in answer["details"]] == [f"$.{key}"], (route, answer)


def test_many_repeated_keys_get_a_bounded_answer(client: TestClient[Litestar]) -> None:
    """Thousands of repeats: found in one linear pass, and the answer lists the first 20, not all of them."""
    pairs = ", ".join(f'"k{i}": 0, "k{i}": 1' for i in range(5_000))
    body = '{"kind": "organizer", "report": {' + pairs + "}}"
    response = client.post(VALIDATE, content=body.encode(), headers={"content-type": "application/json"})
    answer = response.json()
    assert_error_body(answer, status=422, response_status=response.status_code)
    assert [d["path"] for d in answer["details"]] == [f"$.report.k{i}" for i in range(20)]
    assert "5000 problem(s)" in answer["message"]
    assert len(response.content) < 10_000


def test_every_json_operation_refuses_query_parameters(app: Litestar, client: TestClient[Litestar]) -> None:
    for route in _json_routes(app):
        response = client.post(
            f"{route}?max_loops=1&debug", content=b"{}", headers={"content-type": "application/json"}
        )
        body = response.json()
        assert_error_body(body, status=422, response_status=response.status_code)
        assert [d["path"] for d in body["details"]] == ["?max_loops", "?debug"], route


@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate", "GZIP"])
def test_a_compressed_body_is_415(client: TestClient[Litestar], encoding: str) -> None:
    response = client.post(
        THINK,
        content=b'{"request_id": "r", "user_query": "q", "subject_id": "s"}',
        headers={"content-type": "application/json", "content-encoding": encoding},
    )
    assert_error_body(response.json(), status=415, response_status=response.status_code)
    assert encoding.lower() in response.json()["message"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param([("content-type", "application/json; charset=iso-8859-1")], 415, id="latin-1"),
        pytest.param([("content-type", "application/json; charset=utf-16")], 415, id="utf-16"),
        pytest.param([("content-type", "application/json; charset=UTF-8")], 200, id="utf-8"),
        pytest.param([("content-type", 'application/json; charset="utf8"')], 200, id="utf8-quoted"),
        pytest.param([("content-type", "application/json; charset=us-ascii")], 415, id="ascii-is-not-what-utf-8-reads"),
        pytest.param([("content-type", "application/json; charset=utf-8; charset=latin-1")], 400, id="two-charsets"),
    ],
)
def test_a_body_is_read_only_as_declared_once_in_utf_8(
    client: TestClient[Litestar], headers: list[tuple[str, str]], status: int
) -> None:
    """Not read as UTF-8 when declared otherwise (a header given twice: `test_http_framing`, over real HTTP)."""
    response = client.post(THINK, content=msgspec.json.encode(VALID), headers=headers)
    if status == 200:
        assert response.status_code == 200, response.text
    else:
        assert_error_body(response.json(), status=status, response_status=response.status_code)


def test_identity_encoding_and_a_bare_question_mark_are_accepted(client: TestClient[Litestar]) -> None:
    response = client.post(f"{THINK}?", json=VALID, headers={"content-encoding": "identity"})
    assert response.status_code == 200, response.text
    assert response.json()["action"] == "SEARCH"


def test_many_query_parameters_get_a_bounded_answer(client: TestClient[Litestar]) -> None:
    query = "&".join(f"p{i}=1" for i in range(50))
    response = client.post(f"{THINK}?{query}", json=VALID)
    answer = response.json()
    assert_error_body(answer, status=422, response_status=response.status_code)
    assert [d["path"] for d in answer["details"]] == [f"?p{i}" for i in range(20)]
    assert "50 problem(s)" in answer["message"]


@pytest.mark.parametrize("at", [38, 57])
def test_a_body_that_is_not_utf_8_names_the_byte_in_the_body(client: TestClient[Litestar], at: int) -> None:
    """Latin-1 text in a string: msgspec counts from the start of that string; the caller needs the body's offset."""
    valid = b'{"request_id": "r", "user_query": "cafe tower height", "subject_id": "s"}'
    body = valid[:at] + b"\xe9" + valid[at + 1 :]  # 38 is the e of cafe, 57 a letter of "subject_id"
    response = client.post(THINK, content=body, headers={"content-type": "application/json"})
    assert_error_body(response.json(), status=400, response_status=response.status_code)
    assert f"(byte {at})" in response.json()["message"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        pytest.param(rb'{"user_query": "a\ud800b"}', r"\ud800 (a high surrogate) without the low surrogate", id="lone"),
        pytest.param(rb'{"user_query": "\udc00"}', "invalid utf-16 surrogate pair", id="lone-low"),
        pytest.param(rb'{"x": {"y": 1e400}}', "a number is out of range", id="number-in-an-object"),
        pytest.param(rb'{"user_query": "ab\ud800"}', "without the low surrogate it needs (byte 18)", id="its-byte"),
        pytest.param(rb'{"user_query": "\\ud800", "x": "', "truncated", id="an-escaped-backslash-then-text"),
    ],
)
def test_a_body_msgspec_cannot_decode_is_named_for_what_it_is(
    client: TestClient[Litestar], body: bytes, said: str
) -> None:
    """Not "Input data was truncated" for a lone surrogate, nor a path of `[...]`s for a number beyond a float."""
    response = client.post(THINK, content=body, headers={"content-type": "application/json"})
    assert_error_body(response.json(), status=400, response_status=response.status_code)
    assert said in response.json()["message"], response.json()["message"]
    assert "[...]" not in response.json()["message"]
