"""The GRACE graph's working state for one step request (never persisted; `session` is what gets sealed).

`events` accumulates across nodes with an explicit reducer; every other key is replaced by the node
that writes it. Nothing relies on TypedDict defaults (LangGraph ignores them).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal, TypedDict

from contracts.common import ErrorResponse
from contracts.grace import (
    GraceAskUserAction,
    GraceCompleteAction,
    GraceEvent,
    GraceRequest,
    GraceSearchAction,
    GraceState,
    PlanStep,
    StepResult,
)
from graphs.grace.replan import Trigger

CursorKind = Literal["search", "question", "plan", "reason", "done"]
FinishReason = Literal["completed", "cancelled", "replan_limit"]
Outcome = GraceSearchAction | GraceAskUserAction | GraceCompleteAction | ErrorResponse


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
    replanned: bool
    finish: FinishReason
    reply: partial[Any]  # an action's constructor with its fields bound; `respond` adds events, usage, state
    outcome: Outcome
