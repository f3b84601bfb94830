"""GRACE's progress records (seed 002 §6 events), as the nodes and the executor report them.

`index` is left 0 here: the node that ends the request numbers the step's events across the session.
"""

from __future__ import annotations

from contracts.grace import EventType, GraceEvent, GraceState, PlanStep
from graphs.grace.wording import say


def event(kind: EventType, message: str, **fields: object) -> GraceEvent:
    """A progress record of `kind` with its message and fields."""
    return GraceEvent(index=0, type=kind, message=message, **fields)  # type: ignore[arg-type]


def step_started(session: GraceState, step: PlanStep) -> GraceEvent:
    """`step_started` for a step about to run (or to be handed to the caller or the user)."""
    return event(
        "step_started",
        say("ev_step_started", session.query, step_id=step.step_id, description=step.description or step.query),
        step_id=step.step_id,
    )
