"""Where GRACE goes next: pure functions of the graph state, testable without a model.

`route_entry` picks what the `take_request` node does with the request; the others are called by the
move that has just updated the state (after judging a result, after the user's answer, after finding
the next step), which returns `Command(goto=...)` with the answer ("advance" meaning: on to the next
step); the node then goes there, or runs the ending it names (`nodes._settle`).
"""

from __future__ import annotations

from typing import Literal

from graphs.grace.intervention import needs_user
from graphs.grace.state import GraceGraphState


def route_entry(state: GraceGraphState) -> Literal["make_plan", "take_tool_result", "take_user_response"]:
    """A first call plans; a later one resumes at what its state is waiting for."""
    prior = state.get("prior")
    if prior is None:
        return "make_plan"
    assert prior.pending is not None  # protocol.check_state guarantees it
    return "take_tool_result" if prior.pending.kind == "SEARCH" else "take_user_response"


def route_after_judge(state: GraceGraphState) -> Literal["replan", "ask_intervention", "advance"]:
    """A replan trigger first; then CONFIRM/ESCALATE stop for the user; SILENT/NOTIFY go on (seed 002 §8.2)."""
    if state.get("trigger") is not None:
        return "replan"
    result = state["result"]
    if result is not None and result.detail is not None and needs_user(result.detail.decision):
        # A step the user already intervened on (and told to proceed, adding input) is not asked about
        # again: re-asking the same question after the same answer would loop forever.
        answered = {u.step_id for u in state["session"].user_inputs}
        if result.step_id not in answered:
            return "ask_intervention"
    return "advance"


def route_after_user_response(state: GraceGraphState) -> Literal["advance", "replan", "finish"]:
    """PROCEED goes on, MODIFY replans, CANCEL finishes (seed 002 §8.4)."""
    response = state["request"].user_response
    assert response is not None
    match response.decision:
        case "CANCEL":
            return "finish"
        case "MODIFY":
            return "replan"
    return "advance"


def route_after_advance(state: GraceGraphState) -> Literal["emit_search", "ask_question", "reason", "finish"]:
    """Searches go to the caller, questions and plan approval to the user, reasoning runs here; else finish."""
    match state["cursor"].kind:
        case "search":
            return "emit_search"
        case "question" | "plan":
            return "ask_question"
        case "reason":
            return "reason"
    return "finish"
