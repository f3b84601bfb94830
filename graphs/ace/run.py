"""Entry points the HTTP layer calls: one function per ACE endpoint (search needs no graph)."""

from __future__ import annotations

from typing import Any

from contracts.ace import (
    AceCurateRequest,
    AceGenerateRequest,
    AceReflectRequest,
    AceSearchRequest,
    AnswerAction,
    CuratedAction,
    ReflectionAction,
    SearchResultsAction,
    WorkflowRequest,
    WorkflowResponse,
)
from contracts.common import Usage
from graphs.ace.hybrid_search import HybridSearch, candidate_mask
from graphs.ace.playbook_checks import check_playbook, check_sections
from graphs.ace.sections import section_rules
from graphs.ace.state import AceOutcome, AceRequest
from graphs.context import AgentContext


async def search(context: AgentContext, request: AceSearchRequest, request_id: str) -> SearchResultsAction:
    """Validate the playbook and the filter, then run the hybrid search (no model involved)."""
    rules = section_rules(context.sections, request.dataset)
    check_playbook(request.playbook, rules)
    check_sections(request.query.section_filter, rules, "$.query.section_filter")
    alpha = context.ace.search_alpha if request.alpha is None else request.alpha
    hits = await HybridSearch(context.embeddings, alpha=alpha).asearch(request.query, request.playbook)
    return SearchResultsAction(
        request_id=request_id,
        results=[hit.to_result() for hit in hits],
        candidates=int(candidate_mask(request.query, request.playbook.bullets).sum()),
        usage=Usage(engine="heuristic"),
    )


async def _run(graph: Any, context: AgentContext, request: AceRequest, request_id: str) -> AceOutcome:
    result = await graph.ainvoke({"request": request, "request_id": request_id}, context=context)
    outcome: AceOutcome = result["outcome"]
    return outcome


async def generate(graph: Any, context: AgentContext, request: AceGenerateRequest, request_id: str) -> AnswerAction:
    """Run the generator graph."""
    outcome = await _run(graph, context, request, request_id)
    assert isinstance(outcome, AnswerAction)
    return outcome


async def reflect(graph: Any, context: AgentContext, request: AceReflectRequest, request_id: str) -> ReflectionAction:
    """Run the reflector graph."""
    outcome = await _run(graph, context, request, request_id)
    assert isinstance(outcome, ReflectionAction)
    return outcome


async def curate(graph: Any, context: AgentContext, request: AceCurateRequest, request_id: str) -> CuratedAction:
    """Run the curator graph."""
    outcome = await _run(graph, context, request, request_id)
    assert isinstance(outcome, CuratedAction)
    return outcome


async def run_workflow(
    graph: Any, context: AgentContext, request: WorkflowRequest, request_id: str
) -> WorkflowResponse:
    """Run the workflow graph (seed 000 §10–11)."""
    outcome = await _run(graph, context, request, request_id)
    assert isinstance(outcome, WorkflowResponse)
    return outcome
