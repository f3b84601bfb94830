"""run_to_output: the one way every agent runs its graph to the value its last node writes."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.invoke import run_to_output
from tests.support.context import make_context


class _State(TypedDict, total=False):
    value: int
    outcome: Any


async def _double(state: _State) -> dict[str, Any]:
    return {"value": state["value"] * 2}


async def _finish(state: _State) -> dict[str, Any]:
    return {"outcome": state["value"] + 1}


def _graph(*, finishes: bool) -> Any:
    graph = StateGraph(_State, context_schema=AgentContext)
    graph.add_node("double", _double)
    graph.add_edge(START, "double")
    if finishes:
        graph.add_node("finish", _finish)
        graph.add_edge("double", "finish")
        graph.add_edge("finish", END)
    else:
        graph.add_edge("double", END)
    return graph.compile()


async def test_the_last_value_written_to_the_outcome_channel_is_returned() -> None:
    assert await run_to_output(_graph(finishes=True), {"value": 20}, make_context()) == 41


async def test_a_graph_that_never_sets_the_outcome_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="without setting `outcome`"):
        await run_to_output(_graph(finishes=False), {"value": 20}, make_context())
