"""The proposal-quality graph: one graph step per attempt (draft, check, then end or re-ask), compiled once."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graphs.context import AgentContext
from graphs.proposal_quality.nodes import generate
from graphs.proposal_quality.state import ProposalGraphState


def build_graph() -> Any:
    """Generate → END (rendered or rejected) | generate again (self-correction, at most 2 re-asks).

    Each attempt is one `generate` step, which calls in order: `nodes.draft` (the rules, or the model's
    answer or corrected answer), `nodes.check` (the validator's verdict, logged), then
    `routing.route_after_check`: a report without errors ends the run rendered (`nodes.render`), an
    attempt with errors and attempts left goes round again, the last one ends it rejected
    (`nodes.reject`). The input is the run (`run.run_report`): the flattened board and the attempts allowed.
    """
    graph = StateGraph(ProposalGraphState, context_schema=AgentContext)
    graph.add_node("generate", generate, destinations=("generate", END))
    graph.add_edge(START, "generate")
    return graph.compile(name="proposal_quality")
