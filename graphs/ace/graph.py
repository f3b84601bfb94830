"""The ACE graphs, compiled once at start-up: generator, reflector, curator and the learning workflow.

The workflow is seed 000 §10's load → search → generate, extended with the reflector's and the curator's
nodes when the request carries feedback: load → search → generate → [resolve → reflect⟲ → finish →
counters → propose → merge → (save)] → respond.
"""

from __future__ import annotations

import itertools
from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.ace import nodes
from graphs.ace.routing import route_after_generate, route_after_merge, route_after_reflect
from graphs.ace.state import AceGraphState
from graphs.context import AgentContext


def _graph() -> StateGraph[AceGraphState, AgentContext, AceGraphState, AceGraphState]:
    return StateGraph(AceGraphState, context_schema=AgentContext)


def _chain(graph: StateGraph[AceGraphState, AgentContext, AceGraphState, AceGraphState], *names: str) -> None:
    for name in names:
        graph.add_node(name, getattr(nodes, name))
    for first, second in itertools.pairwise(names):
        graph.add_edge(first, second)


def build_generator_graph() -> Any:
    """Prepare → search → generate → respond."""
    graph = _graph()
    _chain(graph, "prepare_generate", "search", "generate", "respond_answer")
    graph.add_edge(START, "prepare_generate")
    graph.add_edge("respond_answer", END)
    return graph.compile(name="ace_generator")


def build_reflector_graph() -> Any:
    """Prepare → resolve used bullets → reflect (repeated while refining) → finish → respond."""
    graph = _graph()
    _chain(graph, "prepare_reflect", "resolve_bullets", "reflect")
    _chain(graph, "finish_reflection", "respond_reflection")
    graph.add_edge(START, "prepare_reflect")
    graph.add_conditional_edges("reflect", route_after_reflect)
    graph.add_edge("respond_reflection", END)
    return graph.compile(name="ace_reflector")


def build_curator_graph() -> Any:
    """Prepare → counters → propose deltas → merge → respond."""
    graph = _graph()
    _chain(graph, "prepare_curate", "update_counters", "propose_deltas", "merge_deltas", "respond_curated")
    graph.add_edge(START, "prepare_curate")
    graph.add_edge("respond_curated", END)
    return graph.compile(name="ace_curator")


def build_workflow_graph() -> Any:
    """Load → search → generate → (reflect → curate → save) → respond."""
    graph = _graph()
    _chain(graph, "load_playbook", "search", "generate")
    _chain(graph, "resolve_bullets", "reflect")
    _chain(graph, "finish_reflection", "update_counters", "propose_deltas", "merge_deltas")
    _chain(graph, "save_playbook", "respond_workflow")
    graph.add_edge(START, "load_playbook")
    graph.add_conditional_edges("generate", route_after_generate)
    graph.add_conditional_edges("reflect", route_after_reflect)
    graph.add_conditional_edges("merge_deltas", route_after_merge)
    graph.add_edge("respond_workflow", END)
    return graph.compile(name="ace_workflow")


GRAPH_BUILDERS = {
    "ace_generator": build_generator_graph,
    "ace_reflector": build_reflector_graph,
    "ace_curator": build_curator_graph,
    "ace_workflow": build_workflow_graph,
}
"""What `librarian_svc.services.GRAPH_BUILDERS` registers for ACE."""
