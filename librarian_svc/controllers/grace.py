"""`POST /agent/grace/step` (one step of a GRACE session) and `/step/stream` (the same step as Server-Sent Events)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response
from litestar.response import ServerSentEvent

from contracts.grace import GraceResponse
from graphs.grace import run as grace
from librarian_svc.request_runner import agent_post, run_agent, stream_agent

DESCRIPTION = (
    "Send `query` with `state: null` first. Then send back the returned `state` token verbatim with exactly what "
    "the action asked for: `tool_result` {step_id, hits|error} after SEARCH, `user_response` {decision, input?, "
    "feedback?} after ASK_USER. A request that does not answer the pending action, or a state that was edited, "
    "replayed for another step or already finished, is 400 `INVALID_INPUT` (the state stays usable). Agent-level "
    "failures (LOOP_LIMIT, TIMEOUT, MODEL_FAILURE) are HTTP 200 with `action: ERROR`."
)


class GraceController(Controller):
    """Plan-and-execute with confidence and human-in-the-loop: SEARCH / ASK_USER → … → COMPLETE or ERROR."""

    path = "/agent/grace"
    tags = ["grace"]  # noqa: RUF012 - Litestar reads this class attribute

    @agent_post(
        "/step",
        grace.SPEC,
        operation_id="graceStep",
        summary="Advance a GRACE session by one step: returns SEARCH, ASK_USER, COMPLETE or ERROR",
        description=DESCRIPTION,
    )
    async def step(self, request: Request[Any, Any, Any]) -> Response[GraceResponse]:
        """Decode → check → one graph step → the action with the next state token."""
        return await run_agent(request)

    @agent_post(
        "/step/stream",
        grace.SPEC,
        streams=True,
        operation_id="graceStepStream",
        summary="The same step as Server-Sent Events: one `progress` event per record, then one `action` event",
        description=DESCRIPTION
        + " Each progress record is an `event: progress` (id = its index); the last event, `event: action`, carries "
        "the body `/agent/grace/step` would have returned. Invalid requests are refused before the stream starts.",
    )
    async def stream(self, request: Request[Any, Any, Any]) -> ServerSentEvent:
        """Check the request now (so bad input is still a 4xx), then stream the step."""
        return await stream_agent(request)
