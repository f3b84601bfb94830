"""Run one Librarian think step on the compiled graph."""

from __future__ import annotations

from typing import Any

from contracts.librarian import LibrarianRequest, LibrarianResponse, LibrarianState
from graphs.context import AgentContext


async def think(
    graph: Any, context: AgentContext, request: LibrarianRequest, prior: LibrarianState | None
) -> tuple[LibrarianResponse, LibrarianState | None]:
    """One step: the action to return and the state to seal into it."""
    result = await graph.ainvoke({"request": request, "prior": prior}, context=context)
    return result["outcome"], result.get("next_state")
