"""The Librarian graph: one think step per invocation, compiled once at start-up."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.librarian.nodes import think
from graphs.librarian.state import LibrarianGraphState


def build_graph() -> Any:
    """START → think → END: a think step is one graph step.

    `think` (`nodes`) validates the step (loop limit, question), ingests the history into the candidate
    pool, judges it (the rules' assessment, and the model's decision when a model is configured), then
    acts: by `routing.choose_action`, it writes the next SEARCH (`plan_queries`; with no fresh query
    left, it finishes with what there is), COMPLETE with the minimal strongest evidence
    (`select_evidence`), or ERROR when nothing usable was found (`fail`). The loop over think steps is
    the caller's: the Go orchestrator runs each SEARCH and calls back with the state.

    These parts are functions `think` calls in order rather than nodes: each always follows the one
    before and only the last chooses, and a graph step costs LangGraph more than several of them (the
    `nodes` docstring has the figures).
    """
    graph = StateGraph(LibrarianGraphState, context_schema=AgentContext)
    graph.add_node("think", think)
    graph.add_edge(START, "think")
    graph.add_edge("think", END)
    return graph.compile(name="librarian")
