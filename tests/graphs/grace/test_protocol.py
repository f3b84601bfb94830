"""The state and request checks that run before the graph: an edited or mismatched state is refused."""

from __future__ import annotations

import msgspec
import pytest

from contracts.grace import (
    ActionDecision,
    Citation,
    ConfidenceFactors,
    ConfidenceScore,
    Evidence,
    GraceRequest,
    Pending,
    StepResult,
)
from graphs.errors import InvalidInput
from graphs.grace.protocol import check_request, check_state
from tests.graphs.grace.test_replan import CONFIG, PLAN, ok, session


def scored(step_id: int, decision: ActionDecision) -> StepResult:
    detail = ConfidenceScore(
        score=0.5,
        decision=decision,
        step_type="rag_search",
        factors=ConfidenceFactors(),
        normalized={},
        weights={},
    )
    return StepResult(step_id=step_id, action="rag_search", status="success", detail=detail)


@pytest.mark.parametrize(
    ("pending", "results", "consistent"),
    [
        (Pending(kind="SEARCH", step_id=1, turn=0), [], True),
        (Pending(kind="SEARCH", step_id=1, turn=0), [ok(1)], False),  # already answered
        (Pending(kind="SEARCH", step_id=3, turn=0), [ok(1), ok(2)], False),  # not a search
        (Pending(kind="SEARCH", step_id=9, turn=0), [], False),  # not in the plan
        (Pending(kind="ASK_USER", step_id=1, ask_kind="CONFIRM", turn=0), [scored(1, "CONFIRM")], True),
        (Pending(kind="ASK_USER", step_id=1, ask_kind="ESCALATE", turn=0), [scored(1, "CONFIRM")], False),
        (Pending(kind="ASK_USER", step_id=1, ask_kind="CONFIRM", turn=0), [], False),
        (Pending(kind="ASK_USER", step_id=None, ask_kind="PLAN", turn=0), [], False),  # the plan needs no approval
        (Pending(kind="ASK_USER", step_id=1, ask_kind="QUESTION", turn=0), [], False),  # not an ask_user step
    ],
)
def test_the_pending_request_must_fit_the_plan_and_results(
    pending: Pending, results: list[StepResult], consistent: bool
) -> None:
    state = msgspec.structs.replace(session(PLAN, results), pending=pending)
    if consistent:
        check_state(state, CONFIG)
    else:
        with pytest.raises(InvalidInput, match="pending"):
            check_state(state, CONFIG)


def test_evidence_and_citations_must_point_at_what_exists() -> None:
    base = msgspec.structs.replace(session(PLAN, [ok(1)]), pending=Pending(kind="SEARCH", step_id=2, turn=0))
    stray = Evidence(step_id=2, document_id="d", snippet="x")
    with pytest.raises(InvalidInput, match="evidence"):
        check_state(msgspec.structs.replace(base, evidence=[stray]), CONFIG)
    with pytest.raises(InvalidInput, match="citation"):
        check_state(msgspec.structs.replace(base, citations=[Citation(step_id=3, evidence=[0])]), CONFIG)


def test_a_first_call_with_a_valid_plan_of_its_own_passes() -> None:
    request = msgspec.convert(
        {
            "request_id": "r",
            "query": "q",
            "plan_steps": [
                {"step_id": 5, "action": "rag_search", "query": "x"},
                {"step_id": 9, "action": "reasoning", "depends_on": [5]},
            ],
        },
        GraceRequest,
    )
    check_request(request, None, CONFIG)
