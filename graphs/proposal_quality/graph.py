"""The proposal-quality graph: generate → check → (render | generate again | reject), compiled once."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.proposal_quality.nodes import check, generate, reject, render
from graphs.proposal_quality.routing import route_after_check
from graphs.proposal_quality.state import ProposalGraphState


def build_graph() -> Any:
    """Generate → check → render | generate (self-correction, at most 2 re-asks) | reject.

    The input holds the flattened board and the attempts allowed (`run.run_report`).
    """
    graph = StateGraph(ProposalGraphState, context_schema=AgentContext)
    graph.add_node("generate", generate)
    graph.add_node("check", check)
    graph.add_node("render", render)
    graph.add_node("reject", reject)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", "check")
    graph.add_conditional_edges("check", route_after_check)
    graph.add_edge("render", END)
    graph.add_edge("reject", END)
    return graph.compile(name="proposal_quality")
