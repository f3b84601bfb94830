"""GRACE's runner: the event stream ends in the action its graph wrote, or in a clear error."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from contracts.grace import GraceRequest
from graphs.context import AgentContext
from graphs.grace import run as grace_run
from tests.support.context import make_context


class _SilentState(TypedDict, total=False):
    request: Any
    prior: Any
    max_replans: int
    events: list[Any]
    result: Any
    trigger: Any
    outcome: Any


async def _note_nothing(state: _SilentState) -> dict[str, Any]:
    return {"events": []}


async def test_an_event_stream_whose_graph_never_sets_the_outcome_is_a_clear_error() -> None:
    """Raised, not asserted: under `python -O` the stream would otherwise yield None as the action."""
    graph = StateGraph(_SilentState, context_schema=AgentContext)
    graph.add_node("note_nothing", _note_nothing)
    graph.add_edge(START, "note_nothing")
    graph.add_edge("note_nothing", END)
    events = grace_run.stream(graph.compile(), make_context(), GraceRequest(query="東京タワーの高さは"), None)
    with pytest.raises(RuntimeError, match="without setting `outcome`"):
        _ = [item async for item in events]
