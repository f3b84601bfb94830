"""The GRACE graph's working state for one step request (never persisted; `session` is what gets sealed).

`events` accumulates across nodes with an explicit reducer; every other key is replaced by the node
that writes it. Nothing relies on TypedDict defaults (LangGraph ignores them).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from contracts.grace import GraceEvent, GraceRequest, GraceState, PlanStep, StepResult
from graphs.grace.actions import Outcome
from graphs.grace.final_answer import FinishReason
from graphs.grace.replan import Trigger

__all__ = ["Cursor", "CursorKind", "FinishReason", "GraceGraphState", "Outcome"]

CursorKind = Literal["search", "question", "plan", "reason", "done"]


@dataclass(frozen=True)
class Cursor:
    """What the executor found to do next: a step (by its action) or nothing left."""

    kind: CursorKind
    step: PlanStep | None = None


class GraceGraphState(TypedDict, total=False):
    """Input (`request`, `prior`, `max_replans`) and what the nodes add."""

    request: GraceRequest
    prior: GraceState | None
    max_replans: int
    session: GraceState
    events: Annotated[list[GraceEvent], operator.add]
    result: StepResult | None
    trigger: Trigger | None
    cursor: Cursor
    finish: FinishReason
    outcome: Outcome
