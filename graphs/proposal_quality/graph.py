"""The proposal-quality graph: generate (and check) → (render | generate again | reject), compiled once."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.proposal_quality.nodes import generate, reject, render
from graphs.proposal_quality.state import ProposalGraphState


def build_graph() -> Any:
    """Generate and check → render | generate (self-correction, at most 2 re-asks) | reject.

    `generate` drafts the report and validates it (`nodes.draft`, then `nodes.check`): the check always
    follows a generation and needs no I/O, so it is a function that node calls rather than a graph step
    of its own, and it routes with `routing.route_after_check` (a `Command`, its destinations listed here).
    The input is the run (`run.run_report`): the flattened board and the attempts allowed.
    """
    graph = StateGraph(ProposalGraphState, context_schema=AgentContext)
    graph.add_node("generate", generate, destinations=("render", "generate", "reject"))  # route_after_check
    graph.add_node("render", render)
    graph.add_node("reject", reject)
    graph.add_edge(START, "generate")
    graph.add_edge("render", END)
    graph.add_edge("reject", END)
    return graph.compile(name="proposal_quality")
