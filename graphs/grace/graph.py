"""The GRACE graph: one step request per invocation, entered where the state left off; compiled once at start-up."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.grace.nodes import (
    advance,
    ask_intervention,
    ask_question,
    emit_search,
    finish,
    make_plan,
    reason,
    replan_node,
    take_tool_result,
    take_user_response,
)
from graphs.grace.routing import route_entry
from graphs.grace.state import GraceGraphState


async def _entry(state: GraceGraphState) -> Any:
    """`route_entry` as a coroutine: LangGraph would run a sync router in a thread pool, a hop per request."""
    return route_entry(state)


def build_graph() -> Any:
    """(make_plan | take_tool_result | take_user_response) → advance ⇄ reason/replan → one action → END.

    Nodes that update and route at once return `Command(goto=...)`; `destinations` names where each can
    go (checked against its `Command[Literal[...]]` return type in the tests), so every edge is listed
    here. A fresh result is judged by the node that produced it (`take_tool_result`, `reason`), and each
    of the four nodes that end the request seals the state and answers with its action itself: a graph
    step costs more than either job, and a step request is a handful of graph steps.
    """
    judged = ("replan", "ask_intervention", "advance")
    graph = StateGraph(GraceGraphState, context_schema=AgentContext)
    graph.add_conditional_edges(START, _entry, ["make_plan", "take_tool_result", "take_user_response"])
    graph.add_node("make_plan", make_plan)
    graph.add_node("take_tool_result", take_tool_result, destinations=judged)
    graph.add_node("take_user_response", take_user_response, destinations=("advance", "replan", "finish"))
    graph.add_node("advance", advance, destinations=("emit_search", "ask_question", "reason", "finish"))
    graph.add_node("reason", reason, destinations=judged)
    graph.add_node("replan", replan_node, destinations=("advance", "finish"))
    graph.add_node("emit_search", emit_search)
    graph.add_node("ask_question", ask_question)
    graph.add_node("ask_intervention", ask_intervention)
    graph.add_node("finish", finish)
    graph.add_edge("make_plan", "advance")
    for last in ("emit_search", "ask_question", "ask_intervention", "finish"):
        graph.add_edge(last, END)
    return graph.compile(name="grace")
