"""GRACE's operation as the request runner serves it: the input check, one step whole (`step`) or streamed.

The node that ends the step builds the action once (events numbered across the session, usage, the
next state's token); `stream` relays the same events live as their nodes finish. The session's turn advances
by one per step, which binds the next request to this response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from langchain_core.runnables import RunnableConfig

from contracts.grace import GRACE_STATE_VERSION, GraceEvent, GraceRequest, GraceResponse, GraceState
from graphs.agent_spec import AgentSpec, StateSpec
from graphs.context import AgentContext
from graphs.grace.protocol import check_request
from graphs.grace.state import GraceGraphState, Outcome
from graphs.invoke import OUTPUT_CHANNEL, missing_output, run_to_output
from graphs.request_limits import check_grace

NODE_VISITS_PER_STEP = 4
"""An upper bound on graph steps per plan step (today at most reason, then replan): supersteps per request."""


def recursion_limit(context: AgentContext) -> int:
    """Supersteps one request may take: every step of every plan revision, plus the entry node and some slack."""
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
) -> AsyncIterator[GraceEvent | Outcome]:
    """Yield each progress record as its node finishes (numbered as the action numbers them), then the action."""
    base = prior.event_count if prior is not None else 0
    emitted = 0
    outcome: Outcome | None = None
    # Updates only: each node's events as it finishes, and the outcome from the update that writes it (a
    # values stream as well would snapshot every channel after every step for that one value).
    async for chunk in graph.astream(
        _inputs(context, request, prior),
        {"recursion_limit": recursion_limit(context)},
        context=context,
        stream_mode="updates",
    ):
        for update in chunk.values():
            for event in (update or {}).get("events", []):
                yield msgspec.structs.replace(event, index=base + emitted)
                emitted += 1
            if update and OUTPUT_CHANNEL in update:
                outcome = update[OUTPUT_CHANNEL]
    if outcome is None:
        raise missing_output()
    yield outcome


async def step(graph: Any, context: AgentContext, request: GraceRequest, prior: GraceState | None) -> Outcome:
    """One step, all at once: the action with its events, usage and the next state's token."""
    config: RunnableConfig = {"recursion_limit": recursion_limit(context)}
    outcome: Outcome = await run_to_output(graph, dict(_inputs(context, request, prior)), context, config=config)
    return outcome


def check(request: GraceRequest, prior: GraceState | None, context: AgentContext) -> None:
    """Within the request limits; answers exactly what the state waits for; the state itself is consistent."""
    check_grace(request)
    check_request(request, prior, context.grace)


SPEC: AgentSpec[GraceRequest, GraceState] = AgentSpec(
    name="grace",
    request_type=GraceRequest,
    response_type=GraceResponse,
    graph="grace",
    state=StateSpec(agent="grace", version=GRACE_STATE_VERSION, state_type=GraceState),
    check=check,
    run=step,
    stream=stream,
    progress_type=GraceEvent,
)
