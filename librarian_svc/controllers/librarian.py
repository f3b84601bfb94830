"""`POST /agent/librarian/think`: one thinking step of the evidence search."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from contracts.librarian import LIBRARIAN_STATE_VERSION, LibrarianRequest, LibrarianResponse, LibrarianState
from graphs.context import AgentContext
from graphs.librarian.run import think
from librarian_svc.services import Services
from librarian_svc.step_runner import run_step

AGENT = "librarian"


class LibrarianController(Controller):
    """The Go orchestrator's entry point: SEARCH → (caller searches) → … → COMPLETE or ERROR."""

    path = "/agent/librarian"
    tags = ["librarian"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/think",
        status_code=200,
        operation_id="librarianThink",
        summary="Run one thinking step: returns SEARCH, COMPLETE or ERROR",
        description=(
            "Send `state: null` first; then send back the returned `state` verbatim with the SEARCH results "
            "appended to `search_history`. Agent-level failures (LOOP_LIMIT, TIMEOUT, MODEL_FAILURE) are HTTP 200 "
            "with `action: ERROR`; contract violations are 4xx with `error_type: INVALID_INPUT`."
        ),
    )
    async def think(
        self, data: JSONBody[LibrarianRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> LibrarianResponse:
        """Decode → one graph step → seal the new state into the action."""
        prior = (
            services.codec.open(
                data.state, agent=AGENT, schema_version=LIBRARIAN_STATE_VERSION, state_type=LibrarianState
            )
            if data.state is not None
            else None
        )

        async def step(context: AgentContext) -> LibrarianResponse:
            outcome, next_state = await think(services.graphs[AGENT], context, data, prior)
            if next_state is None:
                return outcome
            sealed = services.codec.seal(next_state, agent=AGENT, schema_version=LIBRARIAN_STATE_VERSION)
            return msgspec.structs.replace(outcome, state=sealed)

        return await run_step(
            services,
            request.scope,
            request_id=data.request_id,
            timeout_ms=data.constraints.timeout_ms,
            retry_state=data.state,
            step=step,
        )
