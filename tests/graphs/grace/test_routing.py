"""GRACE's routing: pure functions of the graph state, checked with plain states and no model."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.grace import (
    ActionDecision,
    ConfidenceFactors,
    ConfidenceScore,
    GraceRequest,
    Pending,
    StepResult,
    UserInput,
)
from graphs.grace.replan import Trigger
from graphs.grace.routing import (
    route_after_advance,
    route_after_judge,
    route_after_user_response,
    route_entry,
)
from graphs.grace.state import Cursor, CursorKind, GraceGraphState
from tests.graphs.grace.test_replan import PLAN, session


def result(decision: ActionDecision) -> StepResult:
    detail = ConfidenceScore(
        score=0.5,
        decision=decision,
        step_type="rag_search",
        factors=ConfidenceFactors(),
        normalized={},
        weights={},
    )
    return StepResult(step_id=1, action="rag_search", status="success", detail=detail)


def request(**fields: Any) -> GraceRequest:
    return msgspec.convert({"request_id": "r", **fields}, GraceRequest)


@pytest.mark.parametrize(
    ("pending", "node"),
    [
        (None, "make_plan"),
        (Pending(kind="SEARCH", step_id=1, turn=1), "take_tool_result"),
        (Pending(kind="ASK_USER", step_id=1, ask_kind="CONFIRM", turn=1), "take_user_response"),
        (Pending(kind="ASK_USER", step_id=None, ask_kind="PLAN", turn=1), "take_user_response"),
    ],
)
def test_route_entry(pending: Pending | None, node: str) -> None:
    prior = None if pending is None else msgspec.structs.replace(session(PLAN, []), pending=pending)
    assert route_entry({"prior": prior}) == node


@pytest.mark.parametrize(
    ("trigger", "decision", "node"),
    [
        (Trigger("STEP_FAILURE", PLAN[0]), "ESCALATE", "replan"),
        (Trigger("LOW_CONFIDENCE", PLAN[0]), "ESCALATE", "replan"),
        (None, "ESCALATE", "ask_intervention"),
        (None, "CONFIRM", "ask_intervention"),
        (None, "NOTIFY", "advance"),
        (None, "SILENT", "advance"),
    ],
)
def test_route_after_judge(trigger: Trigger | None, decision: ActionDecision, node: str) -> None:
    state: GraceGraphState = {"trigger": trigger, "result": result(decision), "session": session(PLAN, [])}
    assert route_after_judge(state) == node


@pytest.mark.parametrize("decision", ["ESCALATE", "CONFIRM"])
def test_a_step_the_user_already_answered_is_not_asked_again(decision: ActionDecision) -> None:
    step_id = result(decision).step_id
    answered = msgspec.structs.replace(session(PLAN, []), user_inputs=[UserInput(step_id=step_id, text="続けて")])
    state: GraceGraphState = {"trigger": None, "result": result(decision), "session": answered}
    assert route_after_judge(state) == "advance"


@pytest.mark.parametrize(("decision", "node"), [("PROCEED", "advance"), ("MODIFY", "replan"), ("CANCEL", "finish")])
def test_route_after_user_response(decision: str, node: str) -> None:
    assert route_after_user_response({"request": request(user_response={"decision": decision})}) == node


@pytest.mark.parametrize(
    ("kind", "node"),
    [
        ("search", "emit_search"),
        ("question", "ask_question"),
        ("plan", "ask_question"),
        ("reason", "reason"),
        ("done", "finish"),
    ],
)
def test_route_after_advance(kind: CursorKind, node: str) -> None:
    assert route_after_advance({"cursor": Cursor(kind=kind)}) == node
