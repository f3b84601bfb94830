"""The ACE graphs, compiled once at start-up: generator, reflector, curator and the learning workflow.

The workflow is seed 000 §10's load → search → generate, extended with the reflector's and the curator's
nodes when the request carries feedback: load → search → generate → [resolve → reflect⟲ → finish →
counters → propose → merge → (save)] → respond. Nodes are wired by reference (`add_sequence` names each
node after its function), so go-to-definition and mypy follow every edge; a router's `Literal` return
type lists where it can go.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.ace.nodes import (
    finish_reflection,
    generate,
    load_playbook,
    merge_deltas,
    prepare_curate,
    prepare_generate,
    prepare_reflect,
    propose_deltas,
    reflect,
    resolve_bullets,
    respond_answer,
    respond_curated,
    respond_reflection,
    respond_workflow,
    save_playbook,
    search,
    update_counters,
)
from graphs.ace.routing import route_after_generate, route_after_merge, route_after_reflect
from graphs.ace.state import AceGraphState
from graphs.context import AgentContext


def _graph() -> StateGraph[AceGraphState, AgentContext, AceGraphState, AceGraphState]:
    return StateGraph(AceGraphState, context_schema=AgentContext)


def build_generator_graph() -> Any:
    """Prepare → search → generate → respond."""
    graph = _graph()
    graph.add_sequence([prepare_generate, search, generate, respond_answer])
    graph.add_edge(START, "prepare_generate")
    graph.add_edge("respond_answer", END)
    return graph.compile(name="ace_generator")


def build_reflector_graph() -> Any:
    """Prepare → resolve used bullets → reflect (repeated while refining) → finish → respond."""
    graph = _graph()
    graph.add_sequence([prepare_reflect, resolve_bullets, reflect])
    graph.add_conditional_edges("reflect", route_after_reflect)  # → reflect | finish_reflection
    graph.add_sequence([finish_reflection, respond_reflection])
    graph.add_edge(START, "prepare_reflect")
    graph.add_edge("respond_reflection", END)
    return graph.compile(name="ace_reflector")


def build_curator_graph() -> Any:
    """Prepare → counters → propose deltas → merge → respond."""
    graph = _graph()
    graph.add_sequence([prepare_curate, update_counters, propose_deltas, merge_deltas, respond_curated])
    graph.add_edge(START, "prepare_curate")
    graph.add_edge("respond_curated", END)
    return graph.compile(name="ace_curator")


def build_workflow_graph() -> Any:
    """Load → search → generate → (resolve → reflect⟲ → finish → counters → propose → merge → save) → respond."""
    graph = _graph()
    graph.add_sequence([load_playbook, search, generate])
    graph.add_conditional_edges("generate", route_after_generate)  # → resolve_bullets | respond_workflow
    graph.add_sequence([resolve_bullets, reflect])
    graph.add_conditional_edges("reflect", route_after_reflect)  # → reflect | finish_reflection
    graph.add_sequence([finish_reflection, update_counters, propose_deltas, merge_deltas])
    graph.add_conditional_edges("merge_deltas", route_after_merge)  # → save_playbook | respond_workflow
    graph.add_sequence([save_playbook, respond_workflow])
    graph.add_edge(START, "load_playbook")
    graph.add_edge("respond_workflow", END)
    return graph.compile(name="ace_workflow")


GRAPH_BUILDERS = {
    "ace_generator": build_generator_graph,
    "ace_reflector": build_reflector_graph,
    "ace_curator": build_curator_graph,
    "ace_workflow": build_workflow_graph,
}
"""What `librarian_svc.services.GRAPH_BUILDERS` registers for ACE."""
