"""The Librarian graph: one think step per invocation, compiled once at start-up."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.librarian.nodes import evaluate, fail, plan_queries, select_evidence
from graphs.librarian.routing import route_after_evaluate
from graphs.librarian.state import LibrarianGraphState


def build_graph() -> Any:
    """The flow: evaluate (validate → ingest → judge) → (plan_queries | select_evidence | fail).

    `evaluate` calls three plain functions in order (`nodes.validate`: loop limit and question;
    `nodes.ingest`: the candidate pool; `nodes.judge`: the rules' assessment and the model's decision):
    each always follows the one before, and a graph step costs more than some of them, so a think step is
    two graph steps. `plan_queries` answers SEARCH (END) or, with no fresh query left, hands over to
    `select_evidence` (something usable) or `fail` (nothing usable). It routes itself with a `Command`;
    its destinations are declared here so that this function shows every edge of the flow.
    """
    graph = StateGraph(LibrarianGraphState, context_schema=AgentContext)
    graph.add_node("evaluate", evaluate)
    graph.add_node("plan_queries", plan_queries, destinations=(END, "select_evidence", "fail"))
    graph.add_node("select_evidence", select_evidence)
    graph.add_node("fail", fail)
    graph.add_edge(START, "evaluate")
    graph.add_conditional_edges("evaluate", route_after_evaluate)
    graph.add_edge("select_evidence", END)
    graph.add_edge("fail", END)
    return graph.compile(name="librarian")
