"""The GRACE graph: one step request per invocation, entered where the state left off; compiled once at start-up."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.grace.nodes import (
    advance,
    ask_intervention,
    ask_question,
    emit_search,
    finish,
    judge,
    make_plan,
    reason,
    replan_node,
    respond,
    take_tool_result,
    take_user_response,
)
from graphs.grace.routing import (
    route_after_advance,
    route_after_judge,
    route_after_replan,
    route_after_user_response,
    route_entry,
)
from graphs.grace.state import GraceGraphState

R = TypeVar("R")


def _on_loop(route: Callable[[GraceGraphState], R]) -> Callable[[GraceGraphState], Awaitable[R]]:
    """A pure router as a coroutine: LangGraph runs sync path functions in a thread pool, a hop per edge."""

    @functools.wraps(route)  # keeps the Literal return annotation LangGraph reads the destinations from
    async def routed(state: GraceGraphState) -> R:
        return route(state)

    return routed


def build_graph() -> Any:
    """(make_plan | take_tool_result → judge | take_user_response) → advance ⇄ reason/judge/replan → respond."""
    graph = StateGraph(GraceGraphState, context_schema=AgentContext)
    graph.add_node("make_plan", make_plan)
    graph.add_node("take_tool_result", take_tool_result)
    graph.add_node("take_user_response", take_user_response)
    graph.add_node("judge", judge)
    graph.add_node("replan", replan_node)
    graph.add_node("advance", advance)
    graph.add_node("reason", reason)
    graph.add_node("emit_search", emit_search)
    graph.add_node("ask_question", ask_question)
    graph.add_node("ask_intervention", ask_intervention)
    graph.add_node("finish", finish)
    graph.add_node("respond", respond)
    graph.add_conditional_edges(START, _on_loop(route_entry))
    graph.add_edge("make_plan", "advance")
    graph.add_edge("take_tool_result", "judge")
    graph.add_edge("reason", "judge")
    graph.add_conditional_edges("judge", _on_loop(route_after_judge))
    graph.add_conditional_edges("take_user_response", _on_loop(route_after_user_response))
    graph.add_conditional_edges("replan", _on_loop(route_after_replan))
    graph.add_conditional_edges("advance", _on_loop(route_after_advance))
    for last in ("emit_search", "ask_question", "ask_intervention", "finish"):
        graph.add_edge(last, "respond")
    graph.add_edge("respond", END)
    return graph.compile(name="grace")
