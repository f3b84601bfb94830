"""Which action a think step ends with, once judged: a pure function of the graph state."""

from __future__ import annotations

from typing import Literal

from graphs.librarian.loop_limit import loop_limit_reached
from graphs.librarian.state import LibrarianGraphState


def choose_action(state: LibrarianGraphState) -> Literal["plan_queries", "select_evidence", "fail"]:
    """Sufficient → select; loop limit not reached → search again; reached → select what exists, or fail."""
    assessment = state["assessment"]
    if assessment.sufficient:
        return "select_evidence"
    if not loop_limit_reached(len(state["request"].search_history), state["loop_limit"]):
        return "plan_queries"
    return "select_evidence" if assessment.usable else "fail"
