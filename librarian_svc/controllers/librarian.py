"""`POST /agent/librarian/think`: one thinking step of the evidence search."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response

from contracts.librarian import LibrarianResponse
from graphs.librarian import run as librarian
from librarian_svc.request_runner import agent_post, run_agent


class LibrarianController(Controller):
    """The Go orchestrator's entry point: SEARCH → (caller searches) → … → COMPLETE or ERROR."""

    path = "/agent/librarian"
    tags = ["librarian"]  # noqa: RUF012 - Litestar reads this class attribute

    @agent_post(
        "/think",
        librarian.SPEC,
        operation_id="librarianThink",
        summary="Run one thinking step: returns SEARCH, COMPLETE or ERROR",
        description=(
            "Send `state: null` first; then send back the returned `state` token verbatim with the SEARCH results "
            "appended to `search_history`. Agent-level failures (LOOP_LIMIT, TIMEOUT, MODEL_FAILURE) are HTTP 200 "
            "with `action: ERROR`; contract violations are 4xx with `error_type: INVALID_INPUT`."
        ),
    )
    async def think(self, request: Request[Any, Any, Any]) -> Response[LibrarianResponse]:
        """Decode → check → one graph step → the action with the next state token."""
        return await run_agent(request)
