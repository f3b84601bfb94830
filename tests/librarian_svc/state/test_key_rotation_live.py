"""Key rotation with real processes: a session outlives a restart onto a new key list (issue 11, Done when)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.live_service import LiveService

pytestmark = [pytest.mark.live, pytest.mark.slow]

KEY_A = "rotation-key-A-0123456789abcdef"
KEY_B = "rotation-key-B-0123456789abcdef"
QUESTION = {"user_query": "東京タワーの高さは何メートルですか", "subject_id": "s-rot"}
HIT = {"document_id": "tower", "page": 3, "snippet": "東京タワーの高さは333メートルである。", "score": 9.0}


def _think(service: LiveService, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{service.base_url}/agent/librarian/think", json=body, timeout=20)


def _next(first: dict[str, Any], state: str) -> dict[str, Any]:
    round_ = {"queries_text": first["queries_text"], "queries_vector": first["queries_vector"], "results": [HIT]}
    return {"request_id": "rot-2", **QUESTION, "state": state, "search_history": [round_]}


def test_a_session_under_key_a_continues_after_a_restart_with_keys_b_a(
    start_live_service: Callable[..., LiveService],
) -> None:
    old = start_live_service({"STATE_SIGNING_KEYS": KEY_A})
    first = _think(old, {"request_id": "rot-1", **QUESTION, "constraints": {"max_loops": 2}}).json()
    assert first["action"] == "SEARCH"
    old.stop()

    rotated = start_live_service({"STATE_SIGNING_KEYS": f"{KEY_B},{KEY_A}"})
    answer = _think(rotated, _next(first, first["state"]))
    assert answer.status_code == 200, answer.text
    assert answer.json()["action"] == "COMPLETE"
    token_b = answer.json()["state"]
    rotated.stop()

    # Tokens the rotated service issues are signed with B: a service that only knows A refuses them.
    only_a = start_live_service({"STATE_SIGNING_KEYS": KEY_A})
    refused = _think(only_a, _next(first, token_b))
    assert refused.status_code == 400
    assert refused.json()["details"][0]["path"] == "$.state"
    assert "signature" in refused.json()["message"]


def test_without_a_key_a_restart_cannot_read_the_old_processes_tokens(
    start_live_service: Callable[..., LiveService],
) -> None:
    first_process = start_live_service({"STATE_SIGNING_KEYS": ""})
    first = _think(first_process, {"request_id": "eph-1", **QUESTION}).json()
    assert "ephemeral" in first_process.logs()
    first_process.stop()
    second_process = start_live_service({"STATE_SIGNING_KEYS": ""})
    refused = _think(second_process, _next(first, first["state"]))
    assert refused.status_code == 400
    assert "signature" in refused.json()["message"]
