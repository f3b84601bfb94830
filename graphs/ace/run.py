"""ACE's operations as the request runner serves them: each one's input check and entry point.

Every check on caller input lives in `checks.py` and runs before any graph does, so the graphs' nodes
only do the work. Search needs no graph, and neither do the stored playbooks' import, export and list
(`playbook/import_export.py`, shared with the command line).
"""

from __future__ import annotations

import asyncio
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
    PlaybookExportRequest,
    PlaybookImportRequest,
    PlaybookImportResponse,
    PlaybookListAction,
    PlaybookListRequest,
    PlaybookListResponse,
    PlaybookStoredAction,
    SearchResultsAction,
    WorkflowRequest,
    WorkflowRunResponse,
)
from contracts.common import Usage
from graphs import request_limits
from graphs.ace.checks import (
    check_curate,
    check_generate,
    check_reflect,
    check_search,
    check_stored_dataset,
    check_workflow,
)
from graphs.ace.playbook.import_export import astore_replacing, export_text, parse_import
from graphs.ace.playbook.sections import section_rules
from graphs.ace.playbook.store import PlaybookStore
from graphs.ace.search.hybrid import HybridSearch, candidate_mask
from graphs.agent_spec import AgentSpec, server_timeout
from graphs.context import AgentContext
from graphs.invoke import run_to_output


async def search(graph: None, context: AgentContext, request: AceSearchRequest, prior: None) -> SearchResultsAction:
    """The hybrid search itself (no model involved)."""
    alpha = context.ace.search_alpha if request.alpha is None else request.alpha
    hits = await HybridSearch(context.embeddings, alpha=alpha, budget=context).asearch(request.query, request.playbook)
    return SearchResultsAction(
        request_id=context.request_id,
        results=[hit.to_result() for hit in hits],
        candidates=int(candidate_mask(request.query, request.playbook.bullets).sum()),
        usage=Usage(engine="heuristic"),
    )


def _store(context: AgentContext) -> PlaybookStore:
    return PlaybookStore(context.ace.playbook_data_dir)


async def import_playbook(
    graph: None, context: AgentContext, request: PlaybookImportRequest, prior: None
) -> PlaybookStoredAction:
    """Parse and check the text as the command line does, then replace the stored playbook under its lock."""
    rules = section_rules(context.sections, request.dataset)
    playbook = await asyncio.to_thread(parse_import, request.text, rules, allow_empty=request.allow_empty)
    request_limits.check_playbook(playbook, "$")  # a parsed text never went through the wire type's limits
    saved, replaced = await astore_replacing(_store(context), request.dataset, playbook, deadline=context.deadline)
    return PlaybookStoredAction(
        request_id=context.request_id,
        dataset=request.dataset,
        bullets=len(saved.bullets),
        sections=list(dict.fromkeys([*saved.metadata.section_titles, *(b.section for b in saved.bullets)])),
        last_bullet_number=saved.metadata.last_bullet_number,
        replaced=replaced,
    )


async def export_playbook(graph: None, context: AgentContext, request: PlaybookExportRequest, prior: None) -> str:
    """The stored playbook as official ACE text (a dataset with nothing stored is a 404, not an empty text)."""
    return await asyncio.to_thread(export_text, _store(context), request.dataset)


async def list_playbooks(
    graph: None, context: AgentContext, request: PlaybookListRequest, prior: None
) -> PlaybookListAction:
    """The datasets that have a stored playbook."""
    return PlaybookListAction(request_id=context.request_id, datasets=await asyncio.to_thread(_store(context).datasets))


async def run_graph(graph: Any, context: AgentContext, request: Any, prior: None) -> Any:
    """Run one of the ACE graphs; its last node sets the response."""
    return await run_to_output(graph, {"request": request, "request_id": context.request_id}, context)


ACE_MEMORY_PER_BODY_BYTE = 100
"""The index, embeddings and decoded playbook of a search, generate, reflect or curate: about 100 MB for a 1 MB
playbook (peak RSS over idle in `python -m bench.hostile`)."""

SEARCH: AgentSpec[AceSearchRequest, None] = AgentSpec(
    name="ace_search",
    request_type=AceSearchRequest,
    response_type=AceSearchResponse,
    check=check_search,
    run=search,
    memory_per_body_byte=ACE_MEMORY_PER_BODY_BYTE,
)
GENERATE: AgentSpec[AceGenerateRequest, None] = AgentSpec(
    name="ace_generate",
    request_type=AceGenerateRequest,
    response_type=AceGenerateResponse,
    graph="ace_generator",
    check=check_generate,
    run=run_graph,
    memory_per_body_byte=ACE_MEMORY_PER_BODY_BYTE,
)
REFLECT: AgentSpec[AceReflectRequest, None] = AgentSpec(
    name="ace_reflect",
    request_type=AceReflectRequest,
    response_type=AceReflectResponse,
    graph="ace_reflector",
    check=check_reflect,
    run=run_graph,
    memory_per_body_byte=ACE_MEMORY_PER_BODY_BYTE,
)
CURATE: AgentSpec[AceCurateRequest, None] = AgentSpec(
    name="ace_curate",
    request_type=AceCurateRequest,
    response_type=AceCurateResponse,
    graph="ace_curator",
    check=check_curate,
    run=run_graph,
    memory_per_body_byte=ACE_MEMORY_PER_BODY_BYTE,
)
STORE_FAILURE = "A stored playbook could not be read or written (`error_type: OTHER`, the message names the problem)"
WORKFLOW: AgentSpec[WorkflowRequest, None] = AgentSpec(
    name="ace_workflow",
    request_type=WorkflowRequest,
    response_type=WorkflowRunResponse,
    graph="ace_workflow",
    check=check_workflow,
    run=run_graph,
    server_error=STORE_FAILURE,
    memory_per_body_byte=ACE_MEMORY_PER_BODY_BYTE,
)
IMPORT: AgentSpec[PlaybookImportRequest, None] = AgentSpec(
    name="playbook_import",
    request_type=PlaybookImportRequest,
    response_type=PlaybookImportResponse,
    check=check_stored_dataset,
    run=import_playbook,
    timeout_ms=server_timeout,
    body="text",
    server_error=STORE_FAILURE,
)
EXPORT: AgentSpec[PlaybookExportRequest, None] = AgentSpec(
    name="playbook_export",
    request_type=PlaybookExportRequest,
    response_type=str,
    check=check_stored_dataset,
    run=export_playbook,
    timeout_ms=server_timeout,
    body="none",
    server_error=STORE_FAILURE,
)
LIST: AgentSpec[PlaybookListRequest, None] = AgentSpec(
    name="playbook_list",
    request_type=PlaybookListRequest,
    response_type=PlaybookListResponse,
    run=list_playbooks,
    timeout_ms=server_timeout,
    body="none",
)
