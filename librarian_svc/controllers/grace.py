"""`POST /agent/grace/step` (one step of a GRACE session) and `/step/stream` (the same step as Server-Sent Events)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import structlog
from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import ServerSentEvent, ServerSentEventMessage

from contracts.common import ErrorResponse
from contracts.grace import GRACE_STATE_VERSION, GraceEvent, GraceRequest, GraceResponse, GraceState
from graphs.context import AgentContext
from graphs.grace import run
from graphs.grace.protocol import check_request
from librarian_svc.request_context import adopt_request_id
from librarian_svc.services import Services
from librarian_svc.step_runner import run_step

AGENT = "grace"

log = structlog.get_logger(__name__)

DESCRIPTION = (
    "Send `query` with `state: null` first. Then send back the returned `state` verbatim with exactly what the "
    "action asked for: `tool_result` {step_id, hits|error} after SEARCH, `user_response` {decision, input?, "
    "feedback?} after ASK_USER. A request that does not answer the pending action, or a state that was edited, "
    "replayed for another step or already finished, is 400 `INVALID_INPUT` (the state stays usable). Agent-level "
    "failures (LOOP_LIMIT, TIMEOUT, MODEL_FAILURE) are HTTP 200 with `action: ERROR`."
)


def _open(services: Services, data: GraceRequest) -> GraceState | None:
    """The request's state, opened and checked, with the request checked against it (raises InvalidInput)."""
    prior = (
        services.codec.open(data.state, agent=AGENT, schema_version=GRACE_STATE_VERSION, state_type=GraceState)
        if data.state is not None
        else None
    )
    check_request(data, prior, services.context.grace)
    return prior


def _sealed(services: Services, outcome: run.StepOutcome) -> GraceResponse:
    state = services.codec.seal(outcome.next_state, agent=AGENT, schema_version=GRACE_STATE_VERSION)
    return msgspec.structs.replace(outcome.response, state=state)


class GraceController(Controller):
    """Plan-and-execute with confidence and human-in-the-loop: SEARCH / ASK_USER → … → COMPLETE or ERROR."""

    path = "/agent/grace"
    tags = ["grace"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/step",
        status_code=200,
        operation_id="graceStep",
        summary="Advance a GRACE session by one step: returns SEARCH, ASK_USER, COMPLETE or ERROR",
        description=DESCRIPTION,
    )
    async def step(
        self, data: JSONBody[GraceRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> GraceResponse:
        """Open and check the state → one graph step → seal the new state into the action."""
        prior = _open(services, data)

        async def advance(context: AgentContext) -> GraceResponse:
            return _sealed(services, await run.step(services.graphs[AGENT], context, data, prior))

        return await run_step(
            services,
            request.scope,
            request_id=data.request_id,
            timeout_ms=data.constraints.timeout_ms,
            retry_state=data.state,
            step=advance,
        )

    @post(
        "/step/stream",
        status_code=200,
        operation_id="graceStepStream",
        summary="The same step as Server-Sent Events: one `progress` event per record, then one `action` event",
        description=DESCRIPTION
        + " Each progress record is an `event: progress` (id = its index); the last event, `event: action`, carries "
        "the body `/agent/grace/step` would have returned. Invalid requests are refused before the stream starts.",
    )
    async def stream(
        self, data: JSONBody[GraceRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> ServerSentEvent:
        """Check the request now (so bad input is still a 4xx), then stream the step."""
        prior = _open(services, data)
        adopt_request_id(request.scope, data.request_id)
        return ServerSentEvent(_events(services, request.scope, data, prior))


def _progress(event: GraceEvent) -> ServerSentEventMessage:
    return ServerSentEventMessage(event="progress", id=event.index, data=msgspec.json.encode(event).decode())


def _action(body: GraceResponse) -> ServerSentEventMessage:
    return ServerSentEventMessage(event="action", data=msgspec.json.encode(body).decode())


async def _events(
    services: Services, scope: Any, data: GraceRequest, prior: GraceState | None
) -> AsyncIterator[ServerSentEventMessage]:
    """Run the step through `run_step` (same deadline and error mapping as `/step`) and relay its records live."""
    queue: asyncio.Queue[GraceEvent] = asyncio.Queue()

    async def advance(context: AgentContext) -> GraceResponse:
        async for item in run.stream(services.graphs[AGENT], context, data, prior):
            if isinstance(item, GraceEvent):
                queue.put_nowait(item)
            else:
                return _sealed(services, item)
        raise AssertionError("run.stream always ends with a StepOutcome")

    task = asyncio.create_task(
        run_step(
            services,
            scope,
            request_id=data.request_id,
            timeout_ms=data.constraints.timeout_ms,
            retry_state=data.state,
            step=advance,
        )
    )
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield _progress(getter.result())
                continue
            getter.cancel()
            break
        while not queue.empty():
            yield _progress(queue.get_nowait())
        try:
            body = task.result()
        except Exception as exc:  # the headers are sent: report a bug as an ERROR event, never a torn stream
            log.error("unhandled exception in a streamed step", exc_info=exc)
            body = ErrorResponse(request_id=data.request_id, error_type="OTHER", message="internal error")
        yield _action(body)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
