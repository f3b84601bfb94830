"""Run one GRACE step on the compiled graph: whole (`step`) or as its progress records arrive (`stream`).

Both go through `stream`, so the SSE endpoint and the plain one cannot drift apart. Events are
numbered here, continuing the session's count, so a UI that reconnects can tell which it has seen;
the session's turn advances by one per step, which binds the next request to this response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgspec

from contracts.common import ErrorResponse
from contracts.grace import GraceEvent, GraceRequest, GraceState
from graphs.context import AgentContext
from graphs.grace.state import GraceGraphState, Outcome

NODE_VISITS_PER_STEP = 4
"""advance → reason → judge (→ replan) at most per plan step: the bound on graph supersteps per request."""


@dataclass(frozen=True)
class StepOutcome:
    """The action to return (events and usage filled in) and the state to seal into it."""

    response: Outcome
    next_state: GraceState


def recursion_limit(context: AgentContext) -> int:
    """Supersteps one request may take: every step of every plan revision, plus the entry and exit nodes."""
    plans = context.grace.replan.max_replans + 1
    return 10 + NODE_VISITS_PER_STEP * context.grace.planner.max_steps * plans


def _inputs(context: AgentContext, request: GraceRequest, prior: GraceState | None) -> GraceGraphState:
    inputs: GraceGraphState = {
        "request": request,
        "prior": prior,
        "max_replans": context.grace.replan.max_replans,
        "events": [],
        "result": None,
        "trigger": None,
    }
    if prior is not None:
        inputs["session"] = msgspec.structs.replace(prior, turn=prior.turn + 1)
    return inputs


async def stream(
    graph: Any, context: AgentContext, request: GraceRequest, prior: GraceState | None
) -> AsyncIterator[GraceEvent | StepOutcome]:
    """Yield each progress record as its node finishes, then the StepOutcome."""
    base = prior.event_count if prior is not None else 0
    emitted = 0
    final: dict[str, Any] | None = None
    async for mode, chunk in graph.astream(
        _inputs(context, request, prior),
        {"recursion_limit": recursion_limit(context)},
        context=context,
        stream_mode=["updates", "values"],
    ):
        if mode == "values":
            final = chunk
            continue
        for update in chunk.values():
            for event in (update or {}).get("events", []):
                yield msgspec.structs.replace(event, index=base + emitted)
                emitted += 1
    assert final is not None, "the graph always runs"
    assert "outcome" in final, "the graph always ends in a node that sets `outcome`"
    yield _finalize(final, base, context)


def _finalize(values: dict[str, Any], base: int, context: AgentContext) -> StepOutcome:
    events = [msgspec.structs.replace(e, index=base + i) for i, e in enumerate(values["events"])]
    session = msgspec.structs.replace(values["session"], event_count=base + len(events))
    outcome = values["outcome"]
    if isinstance(outcome, ErrorResponse):
        return StepOutcome(response=msgspec.structs.replace(outcome, usage=context.usage), next_state=session)
    return StepOutcome(
        response=msgspec.structs.replace(outcome, events=events, usage=context.usage), next_state=session
    )


async def step(graph: Any, context: AgentContext, request: GraceRequest, prior: GraceState | None) -> StepOutcome:
    """One step, all at once."""
    async for item in stream(graph, context, request, prior):
        if isinstance(item, StepOutcome):
            return item
    raise AssertionError("stream() always ends with a StepOutcome")
