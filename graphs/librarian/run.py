"""The Librarian's operation as the request runner serves it: its one input check and one think step."""

from __future__ import annotations

from typing import Any

from contracts.librarian import LIBRARIAN_STATE_VERSION, LibrarianRequest, LibrarianResponse, LibrarianState
from graphs.agent_spec import AgentSpec, StateSpec
from graphs.context import AgentContext
from graphs.errors import raise_if_problems
from graphs.invoke import run_to_output
from graphs.librarian.history_check import verify_continuation
from graphs.librarian.loop_limit import pinned_loop_limit
from graphs.request_limits import check_librarian
from graphs.text.blank import blank_problems


def check(request: LibrarianRequest, prior: LibrarianState | None, context: AgentContext) -> None:
    """Visible text to search for; within the limits; the history continues the state; the pinned loop limit."""
    raise_if_problems(
        blank_problems([("$.user_query", request.user_query), ("$.subject_id", request.subject_id)]),
        "the question is blank",
        status_code=422,
    )
    check_librarian(request)
    verify_continuation(request, prior)
    pinned_loop_limit(request, prior)


async def think(
    graph: Any, context: AgentContext, request: LibrarianRequest, prior: LibrarianState | None
) -> LibrarianResponse:
    """One step: SEARCH, COMPLETE or ERROR, with the next state sealed into it."""
    outcome: LibrarianResponse = await run_to_output(graph, {"request": request, "prior": prior}, context)
    return outcome


SPEC: AgentSpec[LibrarianRequest, LibrarianState] = AgentSpec(
    name="librarian",
    request_type=LibrarianRequest,
    response_type=LibrarianResponse,
    graph="librarian",
    state=StateSpec(agent="librarian", version=LIBRARIAN_STATE_VERSION, state_type=LibrarianState),
    check=check,
    run=think,
)
