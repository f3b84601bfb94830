"""The Librarian's LLM path through the real OpenAI and Gemini clients, over HTTP to the loopback fake.

One structured call per think step; unknown ids dropped; unusable output falls back to the rules;
provider failure → MODEL_FAILURE and slowness → TIMEOUT, both with the state to retry with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.fakes.llm_server import FakeLLMServer, Reply, request_text
from tests.graphs.librarian.helpers import TOWER_HIT

pytestmark = pytest.mark.llm

THINK = "/agent/librarian/think"
TOWER = TOWER_HIT
FUJI = {"document_id": "fuji", "page": 1, "snippet": "富士山の標高は3776メートル。", "score": 3.0}


def decision(**fields: Any) -> str:
    base: dict[str, Any] = {
        "sufficient": True,
        "missing": [],
        "selected": [],
        "queries_text": [],
        "queries_vector": [],
        "rationale": "",
        "coverage_notes": "",
    }
    return json.dumps(base | fields, ensure_ascii=False)


def first_then_second(client: TestClient[Litestar], results: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}
    first = client.post(THINK, json=body).json()
    assert first["action"] == "SEARCH", first
    round_ = {"queries_text": first["queries_text"], "queries_vector": first["queries_vector"], "results": results}
    second = {**body, "state": first["state"], "search_history": [round_]}
    return client.post(THINK, json=second).json()


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_model_selects_the_evidence_in_one_call(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer, provider: str
) -> None:
    client = llm_client_for(provider)
    llm_server.script(
        decision(sufficient=False, queries_text=["東京タワー 高さ"], queries_vector=["東京タワーはどれくらい高い"]),
        decision(selected=[{"id": "c1", "why_relevant": "states the height"}], coverage_notes="height stated"),
    )
    final = first_then_second(client, [TOWER, FUJI])
    assert final["action"] == "COMPLETE", final
    assert [e["document_id"] for e in final["evidence"]] == ["tower"]
    assert final["coverage_notes"] == "height stated"
    assert final["usage"]["engine"] == ("gemini" if provider == "gemini" else "openai-compatible")
    assert final["usage"]["llm_calls"] == 1
    assert final["usage"]["total_tokens"] > 0
    assert len(llm_server.chat_requests) == 2  # one call per think step
    prompt = request_text(llm_server.chat_requests[1])
    assert "[c1]" in prompt
    assert "<snippet>" in prompt


def test_model_queries_are_used_but_never_reissued(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    llm_server.script(
        decision(sufficient=False, queries_text=["東京タワー 高さ", "東京タワー 高さ"], queries_vector=[])
    )
    body = {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}
    first = client.post(THINK, json=body).json()
    assert first["queries_text"] == ["東京タワー 高さ"]


def test_invented_ids_are_dropped(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    invented = decision(selected=[{"id": "c99"}, {"id": "admin"}])
    llm_server.script(decision(sufficient=False), invented, invented)
    final = first_then_second(client, [TOWER, FUJI])
    assert final["action"] == "COMPLETE"
    assert {e["document_id"] for e in final["evidence"]} <= {"tower", "fuji"}
    reask = request_text(llm_server.chat_requests[-1])
    assert "c99" in reask  # the re-ask named the unknown id


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("I think the evidence is fine.", id="prose"),
        pytest.param('{"sufficient": "maybe", "selected": 3}', id="wrong-schema"),
        pytest.param("", id="empty"),
    ],
)
def test_unusable_output_falls_back_to_the_rules(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer, reply: str
) -> None:
    client = llm_client_for()
    llm_server.default_reply = Reply(content=reply)
    final = first_then_second(client, [TOWER, FUJI])
    assert final["action"] in {"COMPLETE", "SEARCH"}
    if final["action"] == "COMPLETE":
        assert final["evidence"][0]["document_id"] == "tower"


def test_provider_failure_is_model_failure_with_state(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for(LLM_MAX_RETRIES="1")
    llm_server.default_reply = Reply(status=500, content="boom")
    body = {"request_id": "r-mf", "user_query": "東京タワーの高さ", "subject_id": "s"}
    response = client.post(THINK, json=body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["action"] == "ERROR"
    assert answer["error_type"] == "MODEL_FAILURE"
    assert answer["request_id"] == "r-mf"
    assert len(llm_server.chat_requests) == 2  # one retry, then give up


def test_slow_model_is_timeout_within_the_budget_and_returns_the_state(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    llm_server.script(decision(sufficient=False, queries_text=["東京タワー"]))
    body = {"request_id": "r", "user_query": "東京タワーの高さ", "subject_id": "s"}
    first = client.post(THINK, json=body).json()
    llm_server.default_reply = Reply(content=decision(), delay_s=5)
    second = {
        **body,
        "state": first["state"],
        "search_history": [{"queries_text": first["queries_text"], "results": [TOWER]}],
        "constraints": {"timeout_ms": 400},
    }
    started = time.monotonic()
    answer = client.post(THINK, json=second).json()
    elapsed = time.monotonic() - started
    assert answer["action"] == "ERROR"
    assert answer["error_type"] == "TIMEOUT"
    assert answer["state"] == first["state"]  # retry the step with the same state
    assert elapsed < 0.4 + 0.5


@pytest.mark.parametrize("rounds", [1, 3, 10])
def test_prompt_stays_bounded_as_history_grows(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer, rounds: int
) -> None:
    client = llm_client_for()
    llm_server.default_reply = Reply(content=decision())
    history = [
        {
            "queries_text": [f"q{r}"],
            "results": [
                {"document_id": f"d{r}-{i}", "page": i, "snippet": f"東京タワー{r}-{i} " + "資料の本文。" * 200}
                for i in range(100)
            ],
        }
        for r in range(rounds)
    ]
    body = {
        "request_id": "r",
        "user_query": "東京タワーの高さ",
        "subject_id": "s",
        "search_history": history,
        "constraints": {"max_loops": 10},
    }
    assert client.post(THINK, json=body).status_code == 200
    prompt = request_text(llm_server.chat_requests[-1])
    assert len(prompt) < 14_000, len(prompt)
