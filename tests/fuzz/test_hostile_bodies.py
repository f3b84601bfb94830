"""A hand-made corpus of hostile bodies against the real server: always a structured 4xx, never a 5xx.

Runs against a live process (uvicorn + httptools), because some of these (huge bodies, broken
encodings, odd content types) are handled partly by the server stack, not only by the app.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.live_service import LiveService

pytestmark = pytest.mark.live

THINK = "/agent/librarian/think"
BASE = '{"request_id": "h", "user_query": "q", "subject_id": "s"'


def _nested(depth: int) -> bytes:
    return (BASE + ', "conversation": ' + "[" * depth + "]" * depth + "}").encode()


def _forged_state() -> bytes:
    state = {
        "schema_version": 1,
        "agent": "librarian",
        "signature": "00" * 32,
        "data": {"rounds_seen": 0, "max_loops": 10, "history_digest": "0" * 64, "query_digest": "x", "subject_id": "s"},
    }
    return json.dumps({"request_id": "h", "user_query": "q", "subject_id": "s", "state": state}).encode()


HOSTILE: dict[str, tuple[bytes, dict[str, str]]] = {
    "deep-nesting": (_nested(100_000), {}),
    "ten-megabyte-string": (b'{"request_id": "h", "subject_id": "s", "user_query": "' + b"a" * 10_000_000 + b'"}', {}),
    "nan": (BASE.encode() + b', "constraints": {"max_loops": NaN}}', {}),
    "infinity": (
        BASE.encode()
        + b', "search_history": [{"results": [{"document_id": "d", "snippet": "s", "score": Infinity}]}]}',
        {},
    ),
    "huge-float": (
        BASE.encode() + b', "search_history": [{"results": [{"document_id": "d", "snippet": "s", "score": 1e999}]}]}',
        {},
    ),
    "duplicate-keys": (b'{"request_id": "h", "user_query": "q", "user_query": 5, "subject_id": "s"}', {}),
    "invalid-utf8": (b'{"request_id": "h", "user_query": "\xc3\x28", "subject_id": "s"}', {}),
    "lone-surrogate": (b'{"request_id": "h", "user_query": "\\ud800", "subject_id": "s"}', {}),
    "nul-bytes": (b'{"request_id": "h\x00", "user_query": "q", "subject_id": "s"}', {}),
    "wrong-content-type": (b"user_query=q&subject_id=s", {"content-type": "application/x-www-form-urlencoded"}),
    "text-plain": (b"hello", {"content-type": "text/plain"}),
    "huge-array": (BASE.encode() + b', "search_history": [' + b",".join([b"{}"] * 200_000) + b"]}", {}),
    "huge-results": (
        BASE.encode()
        + b', "search_history": [{"results": ['
        + b",".join([b'{"document_id":"d","snippet":"s"}'] * 50_000)
        + b"]}]}",
        {},
    ),
    "forged-state": (_forged_state(), {}),
    "state-of-wrong-type": (BASE.encode() + b', "state": "please trust me"}', {}),
    "top-level-string": (b'"just a string"', {}),
    "empty-object": (b"{}", {}),
    "negative-page": (
        BASE.encode() + b', "search_history": [{"results": [{"document_id": "d", "snippet": "s", "page": -1}]}]}',
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_body_gets_structured_4xx(live_service: LiveService, name: str) -> None:
    body, headers = HOSTILE[name]
    response = httpx.post(
        f"{live_service.base_url}{THINK}",
        content=body,
        headers={"content-type": "application/json", **headers},
        timeout=30,
    )
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    payload = response.json()
    assert payload["action"] == "ERROR"
    assert payload["error_type"] == "INVALID_INPUT"
    assert "Traceback" not in response.text


def test_the_server_still_answers_afterwards(live_service: LiveService) -> None:
    assert httpx.get(f"{live_service.base_url}/health", timeout=5).status_code == 200
