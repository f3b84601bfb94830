"""Where the Librarian goes after evaluating: plain functions, testable without a model."""

from __future__ import annotations

from typing import Literal

from graphs.librarian.state import LibrarianGraphState


def route_after_evaluate(state: LibrarianGraphState) -> Literal["plan_queries", "select_evidence", "fail"]:
    """Sufficient → select; rounds left → search again; out of rounds → select what exists, or fail."""
    assessment = state["assessment"]
    if assessment.sufficient:
        return "select_evidence"
    if len(state["request"].search_history) < state["max_loops"]:
        return "plan_queries"
    return "select_evidence" if assessment.usable else "fail"
