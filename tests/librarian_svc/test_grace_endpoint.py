"""`POST /agent/grace/step` end to end on the embedded engine: whole sessions walked over HTTP (issue 5's scenarios)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.grace import MAX_STEP_ID, GraceResponse
from contracts.limits import GRACE
from tests.graphs.grace.helpers import (
    MIDDLING_TOWER_HITS,
    STEP,
    STRONG_TOWER_HITS,
    TOWER_QUESTION,
    WEAK_HITS,
    Walker,
    event_types,
    hit,
)
from tests.support.asgi import asgi_client
from tests.support.context import make_context
from tests.support.state_tokens import read_token, with_state_opened


@pytest.fixture(name="walker")
def fixture_walker(client: TestClient[Litestar]) -> Walker:
    return Walker(client)


def sent_hits(*groups: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(h["document_id"], h["snippet"]) for group in groups for h in group}


# --- the plan and the first SEARCH ----------------------------------------------------------------


def test_first_call_plans_search_then_answer_and_asks_for_the_search(walker: Walker) -> None:
    first = walker.start()
    assert first["action"] == "SEARCH"
    assert first["request_id"] == "req-1"
    steps = first["plan"]["steps"]
    assert [s["action"] for s in steps] == ["rag_search", "reasoning"]
    assert steps[1]["depends_on"] == [steps[0]["step_id"]]
    assert first["step_id"] == steps[0]["step_id"]
    assert first["query"] == TOWER_QUESTION
    assert first["collection"] == "documents"  # the configured default
    assert "タワー" in first["keywords"]
    assert first["top_k"] == 5
    assert event_types(first) == ["plan_created", "step_started"]
    assert [e["index"] for e in first["events"]] == [0, 1]
    assert first["usage"] == {
        "engine": "heuristic",
        "model": None,
        "llm_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "fallback": False,
        "fallback_reason": None,
    }
    assert read_token(first["state"])["agent"] == "grace"
    assert read_token(first["state"])["schema_version"] == 1


def test_the_planner_picks_among_the_callers_collections(walker: Walker) -> None:
    collections = [
        {"name": "recipes", "description": "料理のレシピ集"},
        {"name": "landmarks", "description": "東京の観光名所とタワーの資料"},
    ]
    first = walker.start(collections=collections)
    assert first["collection"] == "landmarks"
    assert first["plan"]["steps"][0]["fallback"] == "rag_search"  # another collection exists


def test_a_complex_question_gets_one_search_per_side_and_an_answer_citing_both(walker: Walker) -> None:
    first = walker.start("東京タワーとスカイツリーの高さの違いは？")
    steps = first["plan"]["steps"]
    assert [s["action"] for s in steps] == ["rag_search", "rag_search", "reasoning"]
    assert [s["query"] for s in steps[:2]] == ["東京タワーの高さ", "スカイツリーの高さ"]
    assert steps[2]["depends_on"] == [steps[0]["step_id"], steps[1]["step_id"]]
    assert first["plan"]["complexity"] >= 0.5
    tower = [
        hit("tower", "東京タワーの高さは333メートルである。", 0.9),
        hit("tower-2", "東京タワーは高さ333メートル。", 0.88),
    ]
    sky = [
        hit("sky", "東京スカイツリーの高さは634メートルである。", 0.9),
        hit("sky-2", "スカイツリーは高さ634メートル。", 0.87),
    ]
    second = walker.search(tower)
    assert second["action"] == "SEARCH"
    assert second["step_id"] == steps[1]["step_id"]
    final = walker.search(sky)
    assert final["action"] == "COMPLETE", final
    assert "333" in final["answer"]
    assert "634" in final["answer"]
    assert {s["document_id"] for s in final["sources"]} >= {"tower", "sky"}


# --- issue 5's scenarios --------------------------------------------------------------------------


def test_high_confidence_path_completes_without_asking(walker: Walker) -> None:
    walker.start()
    final = walker.search(STRONG_TOWER_HITS)
    assert final["action"] == "COMPLETE", final
    assert final["status"] == "completed"
    assert "333" in final["answer"]
    assert "[S1]" in final["answer"]
    assert final["confidence"] >= 0.7
    assert [(h["action"], h["status"]) for h in final["history"]] == [
        ("rag_search", "success"),
        ("reasoning", "success"),
    ]
    assert {d for h in final["history"] for d in h["sources"]} <= {h["document_id"] for h in STRONG_TOWER_HITS}
    assert {(s["document_id"], s["snippet"]) for s in final["sources"]} <= sent_hits(STRONG_TOWER_HITS)
    assert final["sources"][0]["page"] == 3
    types = event_types(final)
    assert types[0] == "step_finished"
    assert types[-1] == "completed"
    assert {"confidence", "decision", "step_started"} <= set(types)
    assert [e["index"] for e in final["events"]] == list(range(2, 2 + len(types)))


def test_low_confidence_search_asks_to_confirm_then_proceeds_to_complete(walker: Walker) -> None:
    walker.start()
    ask = walker.search(MIDDLING_TOWER_HITS)
    assert ask["action"] == "ASK_USER", ask
    assert ask["kind"] == "CONFIRM"
    assert ask["options"] == ["PROCEED", "MODIFY", "CANCEL"]
    assert ask["step"]["action"] == "rag_search"
    assert 0.4 <= ask["confidence"]["score"] < 0.7
    assert ask["confidence"]["decision"] == "CONFIRM"
    assert set(ask["confidence"]["normalized"]) >= {"hit_count", "max_score", "mean_score", "source_agreement"}
    assert ask["result"]["sources"] == ["blog", "forum"]
    assert "0.6" in ask["question"] or "0.7" in ask["question"] or "0.5" in ask["question"]
    final = walker.answer("PROCEED")
    assert final["action"] == "COMPLETE", final
    assert final["status"] == "completed"
    assert "333" in final["answer"]
    assert event_types(final)[0] == "user_response"


def test_escalate_takes_the_users_input_and_cites_it(walker: Walker) -> None:
    walker.start()
    ask = walker.search(WEAK_HITS)
    assert ask["action"] == "ASK_USER"
    assert ask["kind"] == "ESCALATE"
    assert ask["confidence"]["score"] < 0.4
    final = walker.answer("PROCEED", "東京タワーの高さは333メートルです。")
    assert final["action"] == "COMPLETE", final
    assert "333" in final["answer"]
    assert "[U1]" in final["answer"]
    assert final["sources"] == []  # the user's words are not a document


def test_escalate_without_input_is_refused_and_the_state_still_works(
    walker: Walker, client: TestClient[Litestar]
) -> None:
    walker.start()
    ask = walker.search(WEAK_HITS)
    refused = client.post(
        STEP, json={"request_id": "x", "state": ask["state"], "user_response": {"decision": "PROCEED"}}
    )
    assert refused.status_code == 400
    assert refused.json()["details"][0]["path"] == "$.user_response.input"
    assert walker.answer("PROCEED", "東京タワーは333メートル。")["action"] == "COMPLETE"


def test_modify_with_input_replans_from_scratch(walker: Walker) -> None:
    first = walker.start()
    walker.search(MIDDLING_TOWER_HITS)
    replanned = walker.answer("MODIFY", "東京タワーの展望台の高さ")
    assert replanned["action"] == "SEARCH", replanned
    assert "replanned" in event_types(replanned)
    event = next(e for e in replanned["events"] if e["type"] == "replanned")
    assert event["strategy"] == "FULL"
    assert replanned["plan"]["revision"] == 1
    assert replanned["plan"]["plan_id"] != first["plan"]["plan_id"]
    old_ids = {s["step_id"] for s in first["plan"]["steps"]}
    assert all(s["step_id"] > max(old_ids) for s in replanned["plan"]["steps"])
    assert "展望台" in replanned["query"]


def test_modify_without_input_retries_the_step_with_its_key_terms(walker: Walker) -> None:
    walker.start()
    walker.search(MIDDLING_TOWER_HITS)
    replanned = walker.answer("MODIFY")
    assert replanned["action"] == "SEARCH"
    assert next(e for e in replanned["events"] if e["type"] == "replanned")["strategy"] == "PARTIAL"
    assert replanned["query"] == "東京 タワー 高 メートル"
    final = walker.search(STRONG_TOWER_HITS)
    assert final["action"] == "COMPLETE"
    # the history keeps the first search's result; the answer rests on the new one
    assert [h["status"] for h in final["history"]] == ["success", "success", "success"]
    assert {s["document_id"] for s in final["sources"]} <= {h["document_id"] for h in STRONG_TOWER_HITS}


def test_cancel_ends_the_session(walker: Walker, client: TestClient[Litestar]) -> None:
    walker.start()
    walker.search(MIDDLING_TOWER_HITS)
    cancelled = walker.answer("CANCEL")
    assert cancelled["action"] == "COMPLETE"
    assert cancelled["status"] == "cancelled"
    assert event_types(cancelled)[-1] == "cancelled"
    again = client.post(
        STEP, json={"request_id": "x", "state": cancelled["state"], "user_response": {"decision": "PROCEED"}}
    )
    assert again.status_code == 400
    assert "finished" in again.json()["message"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("出典が古いので中止", "ユーザーの判断: CANCEL（入力: 出典が古いので中止）"),
        ("  ", "ユーザーの判断: CANCEL"),
        (None, "ユーザーの判断: CANCEL"),
    ],
)
def test_cancel_keeps_the_users_reason_in_its_event(walker: Walker, text: str | None, message: str) -> None:
    """A CANCEL reads no input, but what the user typed is on record, not dropped."""
    walker.start()
    walker.search(MIDDLING_TOWER_HITS)
    cancelled = walker.answer("CANCEL", text)
    said = next(e for e in cancelled["events"] if e["type"] == "user_response")
    assert said["message"] == message
    assert cancelled["status"] == "cancelled"
    assert "出典が古い" not in cancelled["answer"]


def test_failed_search_falls_back_to_the_next_collection(walker: Walker) -> None:
    collections = [{"name": "wiki", "description": "東京タワー 百科事典"}, {"name": "web", "description": "ウェブ"}]
    first = walker.start(collections=collections)
    assert first["collection"] == "wiki"
    fallback = walker.search(error="vector store unavailable")
    assert fallback["action"] == "SEARCH", fallback
    event = next(e for e in fallback["events"] if e["type"] == "replanned")
    assert event["strategy"] == "FALLBACK"
    assert fallback["collection"] == "web"
    assert fallback["query"] == first["query"]
    assert fallback["step_id"] > first["step_id"]
    final = walker.search(STRONG_TOWER_HITS)
    assert final["action"] == "COMPLETE"
    assert final["history"][0]["status"] == "failed"
    assert final["history"][0]["error"] == "vector store unavailable"
    assert final["history"][0]["detail"]["penalties"] == [
        {"name": "tool_failure", "multiplier": 0.6},
        {"name": "zero_hits", "multiplier": 0.5},
    ]


def test_a_partly_failed_search_uses_its_hits_with_the_tool_failure_penalty(walker: Walker) -> None:
    walker.start()
    ask = walker.search(STRONG_TOWER_HITS, error="one shard timed out")
    assert ask["action"] == "ASK_USER", ask  # 0.88 x 0.6: confirm before going on
    assert ask["kind"] == "CONFIRM"
    assert ask["result"]["status"] == "success"
    assert ask["result"]["error"] == "one shard timed out"
    assert ask["confidence"]["penalties"] == [{"name": "tool_failure", "multiplier": 0.6}]
    assert "replanned" not in event_types(ask)


def test_failed_search_with_one_collection_falls_back_to_asking_the_user(walker: Walker) -> None:
    walker.start()
    question = walker.search(error="timeout")
    assert question["action"] == "ASK_USER", question
    assert question["kind"] == "QUESTION"
    assert question["step"]["action"] == "ask_user"
    assert "timeout" in question["question"]
    final = walker.answer("PROCEED", "東京タワーの高さは333メートル。")
    assert final["action"] == "COMPLETE"
    assert "[U1]" in final["answer"]
    assert final["history"][1]["action"] == "ask_user"
    assert final["history"][1]["confidence"] == 1.0


def test_a_search_that_finds_nothing_is_retried_with_key_terms(walker: Walker) -> None:
    walker.start()
    retry = walker.search([])
    assert retry["action"] == "SEARCH"
    event = next(e for e in retry["events"] if e["type"] == "replanned")
    assert event["strategy"] == "PARTIAL"
    assert retry["query"] == "東京 タワー 高 メートル"
    first_result = retry["plan"]["steps"]  # the failed step is gone from the plan, kept in the history
    assert all(s["query"] != TOWER_QUESTION for s in first_result if s["action"] == "rag_search")


def test_replans_are_bounded_then_the_user_is_asked(walker: Walker) -> None:
    walker.start()
    for _ in range(2):  # replan.max_replans
        assert walker.search([])["action"] == "SEARCH"
    asked = walker.search([])
    assert asked["action"] == "ASK_USER"
    assert asked["kind"] == "ESCALATE"
    assert asked["confidence"]["penalties"] == [{"name": "zero_hits", "multiplier": 0.5}]
    assert asked["plan"]["revision"] == 2


def test_failures_past_the_replan_limit_with_nothing_gathered_are_loop_limit(walker: Walker) -> None:
    steps = [
        {"step_id": 1, "action": "rag_search", "query": "東京タワー", "collection": "documents"},
        {"step_id": 2, "action": "reasoning", "query": TOWER_QUESTION, "depends_on": [1]},
    ]
    walker.start(plan_steps=steps)
    for _ in range(2):
        assert walker.search(error="down")["action"] == "SEARCH"
    final = walker.search(error="down")
    assert final["action"] == "ERROR"
    assert final["error_type"] == "LOOP_LIMIT"
    assert read_token(final["state"])["agent"] == "grace"


def test_failures_past_the_replan_limit_answer_with_what_was_gathered(walker: Walker) -> None:
    steps = [
        {"step_id": 1, "action": "rag_search", "query": "東京タワーの高さ", "collection": "documents"},
        {"step_id": 2, "action": "rag_search", "query": "スカイツリーの高さ", "collection": "documents"},
        {"step_id": 3, "action": "reasoning", "query": "東京タワーとスカイツリーの高さ", "depends_on": [1, 2]},
    ]
    walker.start("東京タワーとスカイツリーの高さの違いは？", plan_steps=steps)
    walker.search(STRONG_TOWER_HITS)
    retries = [walker.search(error="down") for _ in range(2)]
    assert [r["action"] for r in retries] == ["SEARCH", "SEARCH"]
    assert [r["plan"]["revision"] for r in retries] == [1, 2]
    assert all(1 in s["depends_on"] for r in retries for s in r["plan"]["steps"] if s["action"] == "reasoning")
    final = walker.search(error="down")
    assert final["action"] == "COMPLETE", final
    assert final["status"] == "partial"
    assert "replan_limit" in event_types(final)
    assert "333" in final["answer"]
    assert {s["document_id"] for s in final["sources"]} <= {h["document_id"] for h in STRONG_TOWER_HITS}
    assert [h["status"] for h in final["history"]] == ["success", "failed", "failed", "failed"]


def test_plan_confirmation_is_asked_first_when_requested(walker: Walker) -> None:
    ask = walker.start(confirm_plan=True)
    assert ask["action"] == "ASK_USER"
    assert ask["kind"] == "PLAN"
    assert ask["step"] is None
    assert ask["plan"]["requires_confirmation"] is True
    search = walker.answer("PROCEED")
    assert search["action"] == "SEARCH"


@pytest.mark.parametrize(
    ("decision", "text", "feedback", "path"),
    [
        pytest.param("PROCEED", "answer in feet, official site only", None, "$.user_response.input", id="input"),
        pytest.param("PROCEED", None, "incorrect", "$.user_response.feedback", id="feedback"),
        pytest.param("MODIFY", "スカイツリーも", "correct", "$.user_response.feedback", id="feedback-with-modify"),
        pytest.param("MODIFY", None, None, "$.user_response.input", id="modify-without-input"),
    ],
)
def test_what_a_plan_ask_would_not_read_is_refused(
    walker: Walker, decision: str, text: str | None, feedback: str | None, path: str
) -> None:
    """PROCEED approves the plan as it is; no step answer exists to rate: either was dropped without a word.
    A MODIFY with nothing to say made the plan again from the question, dropping the caller's own plan."""
    walker.start(confirm_plan=True)
    refused = walker.answer(decision, text, feedback, expect=400)
    assert refused["details"][0]["path"] == path
    assert walker.answer("PROCEED")["action"] == "SEARCH"  # the same state still works


@pytest.mark.parametrize("error", ["", "  ", "\u200b"])
def test_a_blank_search_error_is_refused_not_taken_for_a_failure(walker: Walker, error: str) -> None:
    walker.start()
    refused = walker.search(STRONG_TOWER_HITS, error=error, expect=400)
    assert refused["details"][0]["path"] == "$.tool_result.error"


def test_modifying_a_plan_that_needs_approval_asks_again(walker: Walker) -> None:
    walker.start(confirm_plan=True)
    again = walker.answer("MODIFY", "スカイツリーも")
    assert again["action"] == "ASK_USER"
    assert again["kind"] == "PLAN"
    assert again["plan"]["revision"] == 1


def test_feedback_moves_the_thresholds_within_bounds_and_keeps_their_order(walker: Walker) -> None:
    walker.start()
    walker.search(MIDDLING_TOWER_HITS)
    after = walker.answer("PROCEED", feedback="correct")
    adjusted = next(e for e in after["events"] if e["type"] == "thresholds_adjusted")
    assert "0.88" in adjusted["message"]
    t = read_token(after["state"])["data"]["thresholds"]
    assert (t["silent"], t["notify"], t["confirm"]) == pytest.approx((0.88, 0.68, 0.38))


def test_feedback_on_a_question_is_refused_not_ignored(walker: Walker) -> None:
    """A QUESTION's answer is the user's own: there is no step answer for `feedback` to rate (it was dropped)."""
    walker.start()
    walker.search(error="timeout")
    refused = walker.answer("PROCEED", "333メートル", feedback="incorrect", expect=400)
    assert refused["details"][0]["path"] == "$.user_response.feedback"


def test_a_session_is_deterministic(client: TestClient[Litestar]) -> None:
    runs = []
    for _ in range(2):
        walker = Walker(client)
        walker.start("東京タワーとスカイツリーの高さの違いは？")
        walker.search(STRONG_TOWER_HITS)
        runs.append(walker.search(MIDDLING_TOWER_HITS))
    assert with_state_opened(runs[0]) == with_state_opened(runs[1])


def test_step_ids_in_responses_come_from_the_plan(walker: Walker) -> None:
    walker.start("東京タワーとスカイツリーの高さの違いは？")
    walker.search(STRONG_TOWER_HITS)
    asked = walker.search(MIDDLING_TOWER_HITS)
    assert asked["action"] == "ASK_USER"
    assert asked["step"]["step_id"] in {s["step_id"] for s in asked["plan"]["steps"]}
    final = walker.answer("PROCEED")
    if final["action"] == "ASK_USER":  # the answer, built on a weak second search, is up for confirmation too
        assert final["step"]["action"] == "reasoning"
        final = walker.answer("PROCEED")
    assert final["action"] == "COMPLETE"
    plan_ids = {s["step_id"] for s in final["plan"]["steps"]}
    assert {h["step_id"] for h in final["history"]} <= plan_ids
    assert {e["step_id"] for e in final["events"] if e["step_id"] is not None} <= plan_ids
    assert {s["step_id"] for s in final["sources"]} <= plan_ids


async def test_proceeding_after_escalate_always_terminates(app: Litestar) -> None:
    """Regression (found by the soak): PROCEED + input on an ESCALATE of an answer used to re-ask forever."""

    from reference_orchestrator.agent_sessions import run_grace
    from reference_orchestrator.corpus import Chunk, Corpus

    corpus = Corpus(
        [
            Chunk("a", 0, "a#0", "イギリスの首都はロンドンである。"),
            Chunk("b", 1, "b#1", "フランスの首都はパリである。"),
            Chunk("c", 2, "c#2", "ドイツの首都はベルリンである。"),
        ]
    )
    async with asgi_client(app) as client:
        steps = await run_grace(client, corpus, "イギリスフランスを何というか。", request_id="esc", max_calls=12)
    assert steps[-1]["action"] == "COMPLETE", [s["action"] for s in steps]
    asked = [(s.get("kind"), (s.get("step") or {}).get("step_id")) for s in steps if s["action"] == "ASK_USER"]
    assert len(asked) == len(set(asked)), asked  # never the same question twice


def _highest_caller_step_id() -> int:
    grace = make_context().grace
    return MAX_STEP_ID - grace.replan.max_replans * grace.planner.max_steps


def test_a_plan_at_the_highest_ids_left_replans_within_the_contract(walker: Walker) -> None:
    """Every replan's new steps still have ids ≤ MAX_STEP_ID, so the session goes on to the end."""
    top = _highest_caller_step_id()
    steps = [
        {"step_id": top - 1, "action": "rag_search", "query": "東京タワー", "collection": "documents"},
        {"step_id": top, "action": "reasoning", "query": TOWER_QUESTION, "depends_on": [top - 1]},
    ]
    walker.start(plan_steps=steps)
    for _ in range(2):  # replan.max_replans
        replanned = walker.search(error="down")
        assert max(s["step_id"] for s in replanned["plan"]["steps"]) <= MAX_STEP_ID
    assert walker.search(error="down")["action"] == "ERROR"  # LOOP_LIMIT, an answer within the contract


def test_a_plan_whose_ids_leave_no_room_for_replans_is_refused(walker: Walker) -> None:
    """The probe's plan: a failed search at 999,999 was replanned as step 1,000,001, which no state could carry."""
    steps = [
        {"step_id": 999_999, "action": "rag_search", "query": "東京タワー", "collection": "documents"},
        {"step_id": 1_000_000, "action": "reasoning", "query": TOWER_QUESTION, "depends_on": [999_999]},
    ]
    refused = walker.post({"query": TOWER_QUESTION, "state": None, "plan_steps": steps}, expect=400)
    assert [d["path"] for d in refused["details"]] == ["$.plan_steps[0].step_id", "$.plan_steps[1].step_id"]
    assert f"step ids go up to {_highest_caller_step_id():,}" in refused["details"][0]["message"]


@pytest.mark.parametrize("second_failure", [False, True], ids=["then-found", "then-failed-again"])
def test_a_partial_replan_of_a_full_plan_keeps_the_completed_steps(walker: Walker, second_failure: bool) -> None:
    """Seven searches and an answer use every step; redoing the answer adds a search. The seven are done, so
    they stay (the plan was replaced by the template, dropping their 21 hits under a `replanned PARTIAL`)."""
    steps: list[dict[str, Any]] = [
        {"step_id": i, "action": "rag_search", "query": f"東京タワー {i}", "collection": "documents"}
        for i in range(1, 8)
    ]
    steps.append({"step_id": 8, "action": "reasoning", "query": TOWER_QUESTION, "depends_on": list(range(1, 8))})
    walker.start(plan_steps=steps)
    for i in range(7):
        asked = walker.search([hit(f"d{i}-{j}", "高さは333メートル", 0.9) for j in range(3)])
    assert (asked["action"], asked["kind"], asked["step"]["step_id"]) == ("ASK_USER", "CONFIRM", 8)
    replanned = walker.answer("MODIFY")
    assert [e["strategy"] for e in replanned["events"] if e["type"] == "replanned"] == ["PARTIAL"]
    plan = replanned["plan"]["steps"]
    assert [s["step_id"] for s in plan[:7]] == list(range(1, 8))  # the completed searches, kept
    assert [s["action"] for s in plan[7:]] == ["rag_search", "reasoning"]
    assert set(range(1, 8)) <= set(plan[-1]["depends_on"])
    return_trip = walker.search(error="connection refused") if second_failure else None
    if return_trip is not None:  # a FALLBACK of the new search: the nine-step plan keeps the seven too
        assert [s["step_id"] for s in return_trip["plan"]["steps"][:7]] == list(range(1, 8))
        final = return_trip
    else:
        final = walker.search([hit("fresh", "東京タワーの高さは333メートルである。", 0.9)])
    while final["action"] in ("ASK_USER", "SEARCH"):
        asked = final["action"] == "ASK_USER"
        final = walker.answer("PROCEED", "333メートルです") if asked else walker.search(STRONG_TOWER_HITS)
    assert final["action"] == "COMPLETE", final
    assert [(h["step_id"], h["status"]) for h in final["history"][:7]] == [(i, "success") for i in range(1, 8)]
    assert "d0-0" in {s["document_id"] for s in final["sources"]}  # the kept steps' hits are still evidence


def test_a_citation_written_in_a_hit_is_not_taken_for_one_of_the_answers(walker: Walker) -> None:
    """A quoted `[S7]` pointed at no source; every label the answer shows names one of its sources."""
    walker.start()
    final = walker.search([hit("tower", "東京タワーの高さは333メートルである[S7]。東京都港区にある電波塔。", 0.95)])
    assert final["action"] == "COMPLETE", final
    labels = {int(n) for n in re.findall(r"\[S([0-9]+)\]", final["answer"])}
    assert labels == set(range(1, len(final["sources"]) + 1))
    assert "［S7］" in final["answer"]


# --- every state handed out is accepted back ----------------------------------------------------------


def _at_limit(text: str, chars: int) -> str:
    """`text` repeated to exactly `chars` characters (the most the contract accepts)."""
    return (text * (chars // len(text) + 1))[:chars]


def _walk_at_the_limits(walker: Walker, query: str, collections: list[dict[str, str]]) -> list[dict[str, Any]]:
    """PLAN → MODIFY (input at its limit) → PROCEED, then every search fails and every question is answered.

    Each response must be a GraceResponse as published, and its state must be taken back (a 400 fails the walk).
    """
    user_input = _at_limit("スカイツリーについても調べてください。", GRACE.user_input_chars)
    answers = [walker.start(query, collections=collections, confirm_plan=True)]
    answers.append(walker.answer("MODIFY", user_input))
    answers.append(walker.answer("PROCEED"))
    while answers[-1]["action"] in ("SEARCH", "ASK_USER") and len(answers) < 16:
        last = answers[-1]
        if last["action"] == "SEARCH":
            answers.append(walker.search(error=_at_limit("timeout ", GRACE.text_chars)))
        else:
            answers.append(walker.answer("PROCEED", user_input))
    return answers


@pytest.mark.parametrize(
    "question",
    [
        pytest.param("東京タワーの高さは何メートルですか。", id="ja-simple"),
        pytest.param("東京タワーとスカイツリーの高さの違いは？", id="ja-comparison"),
        pytest.param("How tall is Tokyo Tower? ", id="en-simple"),
    ],
)
@pytest.mark.parametrize("collections", [1, 2], ids=["one-collection", "two-collections"])
def test_every_state_handed_out_at_the_legal_extremes_is_accepted_back(
    walker: Walker, question: str, collections: int
) -> None:
    """The probe's session: a FULL replan planned for an 8,000-character question plus 8,000 characters of the
    user's input and sealed a step description of 10,170 characters; the next call refused that state (400)."""
    named = [{"name": _at_limit(f"c{i}", 128), "description": "x"} for i in range(collections)]
    answers = _walk_at_the_limits(walker, _at_limit(question, GRACE.query_chars), named)
    assert answers[-1]["action"] in ("COMPLETE", "ERROR"), [a["action"] for a in answers]
    assert len(answers) > 4  # past the replans of the failed searches
    for answer in answers:
        msgspec.convert(answer, GraceResponse)  # the published schema, the steps' `Text` limit included
        for step in answer["plan"]["steps"] if "plan" in answer else []:
            assert len(step["description"]) <= GRACE.text_chars
            assert len(step["query"]) <= GRACE.text_chars


def test_a_state_over_max_state_bytes_is_not_issued(make_app: Callable[..., Litestar]) -> None:
    """Seal holds a state to the limits `open` does: an ERROR saying why, never a state the next call refuses."""
    with TestClient(app=make_app({"MAX_STATE_BYTES": "1024"}), raise_server_exceptions=False) as client:
        hits = [hit(f"doc-{i}", f"東京タワーの高さは333メートルである。資料{i}番。" * 20, 0.6) for i in range(5)]
        walker = Walker(client)
        first = walker.start()
        assert first["action"] == "SEARCH", first  # a first state is small
        answer = walker.search(hits)  # the kept snippets make the next one larger than 1,024 bytes
        assert (answer["action"], answer["error_type"]) == ("ERROR", "OTHER"), answer
        assert "next state was not issued" in answer["message"]
        assert "MAX_STATE_BYTES" in answer["message"]
        assert answer["state"] == first["state"]  # the request's own state, still good for another answer
        walker.last = first
        walker.search([hit("tower", "333メートル", 0.9)])  # accepted (200), whatever the next state's fate
