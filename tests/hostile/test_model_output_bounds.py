"""A hostile or runaway model: replies over the size limit are refused unread, fields are clipped to what comes back.

Issue 15.5: a reply of 16,000 `{` then `]` blocked the loop for 12 s, and a 100,000-character
`queries_text` went out in a SEARCH whose state the next call refused, which killed the session.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.limits import LIBRARIAN, MODEL
from graphs.librarian.llm_step import LLMDecision
from graphs.llm import structured_output
from graphs.llm.reply_bounds import clip_to_schema, echo_of
from graphs.llm.structured_output import parse_reply
from tests.fakes.llm_server import FakeLLMServer, request_text

THINK = "/agent/librarian/think"
QUESTION = {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}


def test_a_reply_over_the_limit_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object) -> object:
        raise AssertionError("an over-long reply must not be parsed")

    monkeypatch.setattr(structured_output, "_decode_json", never)
    parsed = parse_reply("{" * (MODEL.reply_chars + 1), LLMDecision)
    assert parsed.value is None
    assert len(parsed.errors) == 1
    assert "reply_chars" in parsed.errors[0]


def test_a_reply_at_the_limit_is_parsed() -> None:
    reply = json.dumps({"sufficient": True, "rationale": "x"})
    padded = reply + " " * (MODEL.reply_chars - len(reply))
    assert parse_reply(padded, LLMDecision).value is not None


def test_the_reask_shows_the_model_only_the_start_of_an_over_long_reply() -> None:
    long = "x" * (MODEL.reply_chars + 10)
    assert len(echo_of(long)) < 3_000
    assert echo_of("short") == "short"


def test_fields_are_clipped_to_what_the_contract_takes_back() -> None:
    reply: dict[str, Any] = {
        "sufficient": False,
        "queries_text": ["東京 " * 50_000] * (LIBRARIAN.queries_per_round + 5),
        "queries_vector": ["q"],
        "missing": [{"category": "term", "description": "d" * 100_000}] * (LIBRARIAN.missing_items + 3),
        "selected": [{"id": "c1", "why_relevant": "w" * 50_000}],
        "rationale": "r" * 50_000,
    }
    decision = msgspec.convert(clip_to_schema(reply, LLMDecision), LLMDecision)
    assert len(decision.queries_text) == LIBRARIAN.queries_per_round
    assert all(len(q) == LIBRARIAN.written_query_chars for q in decision.queries_text)
    assert len(decision.missing) == LIBRARIAN.missing_items
    assert len(decision.missing[0].description) == LIBRARIAN.text_chars
    assert len(decision.selected[0].why_relevant) == LIBRARIAN.text_chars
    assert len(decision.rationale) == LIBRARIAN.text_chars
    assert decision.queries_vector == ["q"]


def test_clipping_leaves_a_wrong_shape_for_validation_to_report() -> None:
    reply = {"sufficient": "yes", "queries_text": "not a list", "missing": [7]}
    assert clip_to_schema(reply, LLMDecision) == reply


@pytest.mark.llm
def test_a_runaway_query_from_the_model_cannot_kill_the_session(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    runaway = ("東京タワー 高さ " * 10_000)[:60_000]  # within the reply limit, 120x a query's length
    reply = {"sufficient": False, "queries_text": [runaway], "queries_vector": ["東京タワーの高さ"]}
    llm_server.script(json.dumps(reply, ensure_ascii=False), json.dumps({"sufficient": False}))
    first = client.post(THINK, json=QUESTION).json()
    assert first["action"] == "SEARCH", first
    assert first["usage"]["fallback"] is False  # the model's plan, clipped: not refused
    assert runaway[: LIBRARIAN.written_query_chars].strip() in first["queries_text"]
    assert all(len(q) <= LIBRARIAN.written_query_chars for q in first["queries_text"] + first["queries_vector"])
    round_ = {"queries_text": first["queries_text"], "queries_vector": first["queries_vector"], "results": []}
    second = client.post(THINK, json={**QUESTION, "state": first["state"], "search_history": [round_]})
    assert second.status_code == 200, second.text  # the history the service wrote is one its contract accepts


@pytest.mark.llm
def test_an_over_long_reply_is_a_bad_reply_then_the_rules_answer(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    client = llm_client_for()
    hostile = "{" * 16_000 + "]" + " " * MODEL.reply_chars
    llm_server.script(hostile, hostile)
    answer = client.post(THINK, json=QUESTION).json()
    assert answer["action"] == "SEARCH", answer
    assert answer["usage"]["fallback"] is True
    assert answer["usage"]["llm_calls"] == 2  # asked, re-asked once, then the rules
    reask = request_text(llm_server.chat_requests[1])
    assert "reply_chars" in reask
    assert len(reask) < len(request_text(llm_server.chat_requests[0])) + 5_000  # not the whole reply echoed


def test_a_search_written_from_the_longest_question_comes_back_valid(client: TestClient[Litestar]) -> None:
    """The rules' own output too: a query or missing element written from an 8,000-character question is cut."""
    question = {**QUESTION, "user_query": ("東京タワーの高さと歴史 " * 1_000)[: LIBRARIAN.user_query_chars]}
    first = client.post(THINK, json=question).json()
    assert first["action"] == "SEARCH", first
    assert all(len(q) <= LIBRARIAN.written_query_chars for q in first["queries_text"] + first["queries_vector"])
    assert all(len(m["description"]) <= LIBRARIAN.text_chars for m in first["missing"])
    round_ = {"queries_text": first["queries_text"], "queries_vector": first["queries_vector"], "results": []}
    second = client.post(THINK, json={**question, "state": first["state"], "search_history": [round_]})
    assert second.status_code == 200, second.text
