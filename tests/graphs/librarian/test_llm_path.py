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
import structlog
from litestar import Litestar
from litestar.testing import TestClient

from contracts.limits import LIBRARIAN
from tests.fakes.llm_server import FakeLLMServer, Reply, request_text
from tests.graphs.librarian.helpers import TOWER_HIT

pytestmark = pytest.mark.llm

THINK = "/agent/librarian/think"
TOWER = TOWER_HIT
FUJI = {"document_id": "fuji", "page": 1, "snippet": "富士山の標高は3776メートル。", "score": 3.0}
TOWER_PICK = {"id": "c1", "why_relevant": "states the height"}


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
    answer: dict[str, Any] = client.post(THINK, json=second).json()
    return answer


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
    assert final["evidence"][0]["why_relevant"] == "states the height"  # the same judgement as the notes
    assert final["coverage_notes"] == "height stated"
    assert final["usage"]["engine"] == ("gemini" if provider == "gemini" else "openai-compatible")
    assert final["usage"]["llm_calls"] == 1
    assert final["usage"]["fallback"] is False
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
    invented = decision(
        selected=[{"id": "c99", "why_relevant": "x"}, {"id": "admin", "why_relevant": "y"}, TOWER_PICK],
        coverage_notes="the height is stated",
    )
    llm_server.script(decision(sufficient=False, queries_text=["東京タワー 高さ"]), invented, invented)
    with structlog.testing.capture_logs() as logs:
        final = first_then_second(client, [TOWER, FUJI])
    assert final["action"] == "COMPLETE"
    assert [e["document_id"] for e in final["evidence"]] == ["tower"]  # the known id kept, the others dropped
    reask = request_text(llm_server.chat_requests[-1])
    assert "c99" in reask  # the re-ask named the unknown id
    assert "admin" in reask
    (dropped,) = [e for e in logs if e["event"] == "dropped ids the model invented"]
    assert (dropped["agent"], dropped["dropped"], dropped["log_level"]) == ("librarian", ["c99", "admin"], "warning")


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
    with structlog.testing.capture_logs() as logs:
        final = first_then_second(client, [TOWER, FUJI])
    assert final["action"] in {"COMPLETE", "SEARCH"}
    if final["action"] == "COMPLETE":
        assert final["evidence"][0]["document_id"] == "tower"
    # The rules answered, and say so; the model's two replies (call and re-ask) are still billed.
    usage = final["usage"]
    assert (usage["engine"], usage["model"], usage["fallback"]) == ("heuristic", "fake", True)
    assert (usage["llm_calls"], usage["input_tokens"], usage["output_tokens"]) == (2, 20, 10)
    assert usage["fallback_reason"].startswith("librarian: unusable model output")
    fallbacks = [e for e in logs if e["event"] == "embedded rules replaced the model's output"]
    assert len(fallbacks) == 2  # one per think step
    assert {(e["agent"], e["attempts"], e["log_level"]) for e in fallbacks} == {("librarian", 2, "warning")}


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
    # Both failed requests are reported: a provider may bill them, and they were made.
    assert answer["usage"] == {
        "engine": "openai-compatible",
        "model": "fake",
        "llm_calls": 2,
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "fallback": False,
        "fallback_reason": None,
    }


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
    assert (answer["usage"]["llm_calls"], answer["usage"]["total_tokens"]) == (1, 0)  # this step's call only


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
                {"document_id": f"d{r}-{i}", "page": i, "snippet": f"東京タワー{r}-{i} " + "資料の本文。" * 30}
                for i in range(LIBRARIAN.hits_total // 10)  # 10 rounds of these: the most history the limits accept
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


PLACEHOLDER_QUERY = "葉緑体 光合成"
"""prompts/librarian/think.txt's example query (an unrelated question's): a model that copies it is echoing."""


def test_a_reply_echoing_the_prompts_placeholders_is_reasked_then_replaced_by_the_rules(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    echo = decision(
        sufficient=False,
        queries_text=[PLACEHOLDER_QUERY],
        queries_vector=["光合成を行う細胞小器官の名前"],
        rationale="行われる場所は分かったが、担う器官がまだ分からないため",
    )
    llm_server.script(echo, echo)
    body = {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}
    first = client.post(THINK, json=body).json()
    assert first["action"] == "SEARCH"
    reask = request_text(llm_server.chat_requests[1])
    assert f"$.queries_text[0]: {PLACEHOLDER_QUERY!r} repeats the prompt's example" in reask
    assert "$.rationale" in reask
    sent = " ".join([*first["queries_text"], *first["queries_vector"], first["rationale"]])
    assert "葉緑体" not in sent  # the rules' queries went out instead
    assert "細胞小器官" not in sent
    assert "東京タワー" in sent
    assert (first["usage"]["engine"], first["usage"]["llm_calls"], first["usage"]["fallback"]) == (
        "heuristic",
        2,
        True,
    )


def test_a_placeholder_echo_fixed_on_the_reask_is_used(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    llm_server.script(
        decision(
            sufficient=False,
            queries_text=["東京タワー 高さ"],
            rationale="行われる場所は分かったが、担う器官がまだ分からないため",
        ),
        decision(sufficient=False, queries_text=["東京タワー 高さ"], rationale="the height is not known yet"),
    )
    body = {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}
    first = client.post(THINK, json=body).json()
    assert (first["queries_text"], first["rationale"]) == (["東京タワー 高さ"], "the height is not known yet")
    assert first["usage"]["engine"] == "openai-compatible"


def test_model_queries_lose_their_question_words_like_the_rules(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    llm_server.script(
        decision(
            sufficient=False,
            queries_text=["東京タワーの高さは何メートルですか？", "What is the height of Tokyo Tower?"],
            queries_vector=["東京タワーの高さは何メートルですか？"],
        )
    )
    body = {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}
    first = client.post(THINK, json=body).json()
    assert first["queries_text"] == ["東京タワーの高さは メートル", "height tokyo tower"]
    assert first["queries_vector"] == ["東京タワーの高さは何メートルですか？"]  # vector search takes questions


def test_rules_evidence_comes_with_the_rules_notes_never_the_models_verdict(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    # The last round: the model selects nothing and calls the evidence insufficient. The COMPLETE then
    # comes from the rules (their selection), so its reasons and notes must be the rules' too.
    client = llm_client_for()
    llm_server.script(
        decision(sufficient=False, queries_text=["東京タワー 高さ"]),
        decision(sufficient=False, coverage_notes="The evidence is insufficient."),
    )
    body = {
        "request_id": "r",
        "user_query": "東京タワーの高さは何メートルですか",
        "subject_id": "s",
        "constraints": {"max_loops": 1},
    }
    first = client.post(THINK, json=body).json()
    round_ = {"queries_text": first["queries_text"], "queries_vector": first["queries_vector"], "results": [TOWER]}
    final = client.post(THINK, json={**body, "state": first["state"], "search_history": [round_]}).json()
    assert final["action"] == "COMPLETE", final
    assert "insufficient" not in final["coverage_notes"]
    assert final["coverage_notes"].startswith("Covered:")
    assert final["evidence"][0]["why_relevant"].startswith("covers ")
    assert (final["usage"]["engine"], final["usage"]["fallback"]) == ("heuristic", True)
    assert "the model selected no evidence" in final["usage"]["fallback_reason"]
