"""The executor's loop (seed 002 §8.2): which step of the plan runs next, in dependency order.

A step whose dependencies did not all succeed is skipped (recorded as `skipped`, with an event) and
so are, in cascade, the steps depending on it. Plan approval, when the plan asks for it, comes first.
"""

from __future__ import annotations

import msgspec

from contracts.grace import GraceEvent, GraceState, StepResult
from graphs.grace.events import event, step_started
from graphs.grace.state import Cursor, CursorKind
from graphs.grace.wording import say

_CURSOR_FOR_ACTION: dict[str, CursorKind] = {"rag_search": "search", "ask_user": "question", "reasoning": "reason"}


def next_step(session: GraceState) -> tuple[GraceState, Cursor, list[GraceEvent]]:
    """The session with newly skipped steps recorded, what to do next, and the events saying so."""
    plan = session.plan
    if plan.requires_confirmation and not session.plan_confirmed:
        return session, Cursor(kind="plan"), []
    answered = {r.step_id for r in session.results}
    succeeded = {r.step_id for r in session.results if r.status == "success"}
    skipped: list[StepResult] = []
    events: list[GraceEvent] = []
    cursor = Cursor(kind="done")
    for step in plan.steps:
        if step.step_id in answered:
            continue
        missing = [d for d in step.depends_on if d not in succeeded]
        if missing:
            skipped.append(StepResult(step_id=step.step_id, action=step.action, status="skipped"))
            answered.add(step.step_id)
            message = say("ev_step_skipped", session.query, step_id=step.step_id, missing=missing[0])
            events.append(event("step_skipped", message, step_id=step.step_id, status="skipped"))
            continue
        cursor = Cursor(kind=_CURSOR_FOR_ACTION[step.action], step=step)
        if cursor.kind == "reason":  # announced now, before the (possibly slow) model call, so a stream shows it
            events.append(step_started(session, step))
        break
    return msgspec.structs.replace(session, results=[*session.results, *skipped]), cursor, events
