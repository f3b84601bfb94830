"""ACE's operations as the request runner serves them: each one's input check and entry point.

Every check on caller input happens here, before any graph runs (the playbook's ids and sections,
the section filter, evaluations and deltas naming bullets that exist, a save into a stored
playbook), so the graphs' nodes only do the work. Search needs no graph.
"""

from __future__ import annotations

from typing import Any

from contracts.ace import (
    AceCurateRequest,
    AceCurateResponse,
    AceGenerateRequest,
    AceGenerateResponse,
    AceReflectRequest,
    AceReflectResponse,
    AceSearchRequest,
    AceSearchResponse,
    SearchResultsAction,
    WorkflowRequest,
    WorkflowRunResponse,
)
from contracts.common import ErrorDetail, Usage
from graphs.ace.hybrid_search import HybridSearch, candidate_mask
from graphs.ace.merge import delta_problems
from graphs.ace.playbook_checks import (
    check_playbook,
    check_sections,
    evaluation_problems,
    playbook_problems,
    raise_if_problems,
)
from graphs.ace.playbook_store import PlaybookStore
from graphs.ace.sections import curate_dataset, reflect_dataset, section_rules
from graphs.agent_spec import AgentSpec
from graphs.context import AgentContext
from graphs.errors import InvalidInput


def check_search(request: AceSearchRequest, prior: None, context: AgentContext) -> None:
    """The playbook's ids and sections, and the section filter, fit the dataset."""
    rules = section_rules(context.sections, request.dataset)
    check_playbook(request.playbook, rules)
    check_sections(request.query.section_filter, rules, "$.query.section_filter")


def check_generate(request: AceGenerateRequest, prior: None, context: AgentContext) -> None:
    """The playbook's ids and sections, and the section filter, fit the dataset."""
    rules = section_rules(context.sections, request.dataset)
    check_playbook(request.playbook, rules)
    check_sections(request.section_filter, rules, "$.section_filter")


def check_reflect(request: AceReflectRequest, prior: None, context: AgentContext) -> None:
    """The playbook's ids and sections fit the dataset."""
    check_playbook(request.playbook, section_rules(context.sections, reflect_dataset(request)))


def check_curate(request: AceCurateRequest, prior: None, context: AgentContext) -> None:
    """The playbook, every evaluation's bullet and the caller's deltas; every problem listed at once."""
    rules = section_rules(context.sections, curate_dataset(request))
    problems = playbook_problems(request.playbook, rules)
    problems += evaluation_problems(request)
    problems += delta_problems(request.deltas, request.playbook, rules)
    raise_if_problems(problems, "invalid curate request")


def check_workflow(request: WorkflowRequest, prior: None, context: AgentContext) -> None:
    """A save goes into a playbook an operator stored: requests update playbooks, never create files."""
    store = PlaybookStore(context.ace.playbook_data_dir)
    if request.save and not store.path_for(request.dataset).is_file():
        message = f"dataset {request.dataset!r} has no stored playbook to save into; import one first"
        raise InvalidInput(message, [ErrorDetail(path="$.save", message=message)])


async def search(graph: None, context: AgentContext, request: AceSearchRequest, prior: None) -> SearchResultsAction:
    """The hybrid search itself (no model involved)."""
    alpha = context.ace.search_alpha if request.alpha is None else request.alpha
    hits = await HybridSearch(context.embeddings, alpha=alpha).asearch(request.query, request.playbook)
    return SearchResultsAction(
        request_id=context.request_id,
        results=[hit.to_result() for hit in hits],
        candidates=int(candidate_mask(request.query, request.playbook.bullets).sum()),
        usage=Usage(engine="heuristic"),
    )


async def run_graph(graph: Any, context: AgentContext, request: Any, prior: None) -> Any:
    """Run one of the ACE graphs; its last node sets the response."""
    result = await graph.ainvoke({"request": request, "request_id": context.request_id}, context=context)
    return result["outcome"]


SEARCH: AgentSpec[AceSearchRequest, None] = AgentSpec(
    name="ace_search", request_type=AceSearchRequest, response_type=AceSearchResponse, check=check_search, run=search
)
GENERATE: AgentSpec[AceGenerateRequest, None] = AgentSpec(
    name="ace_generate",
    request_type=AceGenerateRequest,
    response_type=AceGenerateResponse,
    graph="ace_generator",
    check=check_generate,
    run=run_graph,
)
REFLECT: AgentSpec[AceReflectRequest, None] = AgentSpec(
    name="ace_reflect",
    request_type=AceReflectRequest,
    response_type=AceReflectResponse,
    graph="ace_reflector",
    check=check_reflect,
    run=run_graph,
)
CURATE: AgentSpec[AceCurateRequest, None] = AgentSpec(
    name="ace_curate",
    request_type=AceCurateRequest,
    response_type=AceCurateResponse,
    graph="ace_curator",
    check=check_curate,
    run=run_graph,
)
WORKFLOW: AgentSpec[WorkflowRequest, None] = AgentSpec(
    name="ace_workflow",
    request_type=WorkflowRequest,
    response_type=WorkflowRunResponse,
    graph="ace_workflow",
    check=check_workflow,
    run=run_graph,
)
