"""The GRACE graph: one step request per invocation, entered where the state left off; compiled once at start-up."""

from __future__ import annotations

from typing import Any, get_args

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.grace.nodes import (
    Judged,
    NextStep,
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


def build_graph() -> Any:
    """(make_plan | take_tool_result | take_user_response) → reason / replan / ask ... → one action → END.

    Every node that updates and routes at once returns `Command(goto=...)`; `destinations` names where
    each can go (checked against its `Command[Literal[...]]` return type in the tests), so every edge
    is listed here. Three jobs are functions the nodes call rather than nodes of their own, because a
    graph step costs more than each of them and a step request is a handful of graph steps: judging a
    fresh result (`take_tool_result`, `reason`: replan, ask the user, or go on), finding the plan's next
    step (`executor.next_step`: the `onward` edges), and sealing the state into the action (the
    four nodes that end the request).
    """
    onward = get_args(NextStep)  # routing.route_after_advance
    judged = get_args(Judged)  # routing.route_after_judge, then on
    graph = StateGraph(GraceGraphState, context_schema=AgentContext)
    graph.add_conditional_edges(START, route_entry, ["make_plan", "take_tool_result", "take_user_response"])
    graph.add_node("make_plan", make_plan, destinations=onward)
    graph.add_node("take_tool_result", take_tool_result, destinations=judged)
    graph.add_node("take_user_response", take_user_response, destinations=("replan", *onward))
    graph.add_node("reason", reason, destinations=judged)
    graph.add_node("replan", replan_node, destinations=onward)
    graph.add_node("emit_search", emit_search)
    graph.add_node("ask_question", ask_question)
    graph.add_node("ask_intervention", ask_intervention)
    graph.add_node("finish", finish)
    for last in ("emit_search", "ask_question", "ask_intervention", "finish"):
        graph.add_edge(last, END)
    return graph.compile(name="grace")
