"""The executor's node-level behaviour (seed 002 §8.2): dependency order, skipped steps, context for reasoning."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from contracts.grace import Evidence, GraceState, PlanStep, StepResult, UserInput
from graphs.grace.executor import next_step
from graphs.grace.reasoning import ancestors, extractive_answer, gather
from tests.graphs.grace.test_replan import PLAN, QUERY, ok, search, session


def run_advance(state: GraceState) -> dict[str, Any]:
    session, cursor, events = next_step(state)
    return {"session": session, "cursor": cursor, "events": events}


def test_the_next_step_is_the_first_unanswered_one() -> None:
    update = run_advance(session(PLAN, [ok(1)]))
    cursor = update["cursor"]
    assert cursor.kind == "search"
    assert cursor.step is not None
    assert cursor.step.step_id == 2


def test_steps_whose_dependencies_did_not_succeed_are_skipped_in_a_cascade() -> None:
    plan = [*PLAN, PlanStep(step_id=4, action="reasoning", query="まとめ", depends_on=[3])]
    failed = StepResult(step_id=2, action="rag_search", status="failed", error="down")
    update = run_advance(session(plan, [ok(1), failed]))
    assert update["cursor"].kind == "done"
    skipped = [r for r in update["session"].results if r.status == "skipped"]
    assert [r.step_id for r in skipped] == [3, 4]
    assert [e.type for e in update["events"]] == ["step_skipped", "step_skipped"]


def test_a_reasoning_step_is_announced_before_it_runs() -> None:
    update = run_advance(session(PLAN, [ok(1), ok(2)]))
    assert update["cursor"].kind == "reason"
    assert [e.type for e in update["events"]] == ["step_started"]


def test_plan_approval_comes_before_any_step() -> None:
    state = session(PLAN, [])
    state = msgspec.structs.replace(state, plan=msgspec.structs.replace(state.plan, requires_confirmation=True))
    assert run_advance(state)["cursor"].kind == "plan"


def test_reasoning_uses_the_evidence_of_its_searches_and_earlier_outputs() -> None:
    plan = [
        search(1),
        search(2, "スカイツリーの高さ"),
        PlanStep(step_id=3, action="ask_user", description="どちらを重視しますか"),
        PlanStep(step_id=4, action="reasoning", query=QUERY, depends_on=[2, 3]),
    ]
    evidence = [
        Evidence(step_id=1, document_id="t", snippet="東京タワーは333メートル。", score=0.9),
        Evidence(step_id=2, document_id="s", snippet="スカイツリーは634メートル。", score=0.9),
    ]
    answered = StepResult(step_id=3, action="ask_user", status="success", output="高さ")
    state = msgspec.structs.replace(
        session(plan, [ok(1), ok(2), answered]),
        evidence=evidence,
        user_inputs=[UserInput(step_id=3, text="高さ")],
    )
    material = gather(plan[3], state)
    assert [e.document_id for e in material.evidence] == ["s"]  # step 1 is not upstream of step 4
    assert material.context == [(3, "高さ")]
    assert ancestors(plan[3], {s.step_id: s for s in plan}) == [2, 3]


def test_the_extractive_answer_cites_only_what_it_was_given() -> None:
    plan = [
        search(1),
        search(2, "スカイツリーの高さ"),
        PlanStep(step_id=3, action="reasoning", query=QUERY, depends_on=[1, 2]),
    ]
    evidence = [
        Evidence(step_id=1, document_id="t", snippet="東京タワーの高さは333メートルである。港区にある。", score=0.9),
        Evidence(step_id=2, document_id="s", snippet="東京スカイツリーの高さは634メートルである。", score=0.8),
        Evidence(step_id=2, document_id="x", snippet="関係のない文章です。", score=0.95),
    ]
    state = msgspec.structs.replace(session(plan, [ok(1), ok(2)]), evidence=evidence)
    answer = asyncio.run(extractive_answer(QUERY, gather(plan[2], state), max_sentences=3))
    assert "333" in answer.text
    assert "634" in answer.text  # one sentence from each search it depends on
    assert {e.document_id for e in answer.cited} == {"t", "s"}
    assert all(e in evidence for e in answer.cited)
    assert "[S1]" in answer.text
    assert "[S2]" in answer.text
    assert 0.0 < answer.self_eval <= 1.0


def test_with_nothing_relevant_the_answer_says_so() -> None:
    plan = [search(1), PlanStep(step_id=2, action="reasoning", query=QUERY, depends_on=[1])]
    evidence = [Evidence(step_id=1, document_id="x", snippet="まったく関係のない話。", score=0.9)]
    state = msgspec.structs.replace(session(plan, [ok(1)]), evidence=evidence)
    answer = asyncio.run(extractive_answer(QUERY, gather(plan[1], state), max_sentences=3))
    assert answer.cited == []
    assert answer.self_eval == 0.0
    assert "見つかりません" in answer.text
