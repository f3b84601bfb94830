"""Proposal quality's operations as the request runner serves them: Organizer and Advisor runs, and validate.

The checks a schema cannot express (a dashboard's size and unique node ids, a focus node that is on the
dashboard, exactly one source of valid ids, the report's overall size and depth) are each operation's
`check`, raised as `InvalidInput`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec

from contracts.common import ErrorDetail, ErrorResponse, Usage
from contracts.limits import PROPOSAL
from contracts.proposal_quality import (
    ProposalRunRequest,
    ProposalRunResponse,
    ProposalValidateRequest,
    ProposalValidateResponse,
    ReportKind,
    ValidationResult,
)
from graphs.agent_spec import AgentSpec
from graphs.context import AgentContext
from graphs.errors import InvalidInput
from graphs.invoke import run_to_output
from graphs.proposal_quality.board import board_from_dashboard, board_size, check_dashboard, has_node
from graphs.proposal_quality.board_agreement import board_disagreements
from graphs.proposal_quality.nodes import off_loop_when_large
from graphs.proposal_quality.state import ProposalRun
from graphs.proposal_quality.validator import validate_report

MAX_REPORT_BYTES = PROPOSAL.report_bytes
"""A report to validate is at most this big as JSON; a real report is a few kilobytes."""
MAX_REPORT_DEPTH = PROPOSAL.report_depth
"""A report to validate nests at most this deep; the report types need five levels."""


def check_run(request: ProposalRunRequest, prior: None, context: AgentContext) -> None:
    """The dashboard passes `check_dashboard`; the focus node, when given, is on it.

    Raises:
        InvalidInput: 422 at `$.focusNodeId`, or the dashboard's (too big, an id listed twice).
    """
    check_dashboard(request.dashboard)
    if request.focus_node_id is not None and not has_node(request.dashboard, request.focus_node_id):
        message = "focusNodeId is not a node of the dashboard"
        raise InvalidInput(message, [ErrorDetail(path="$.focusNodeId", message=message)], status_code=422)


def check_validate(request: ProposalValidateRequest, prior: None, context: AgentContext) -> None:
    """Exactly one of `validNodeIds` and `dashboard` (checked by `check_dashboard`); a report not too big or deep.

    Raises:
        InvalidInput: 422 at `$.validNodeIds`, the dashboard's, or 413 at `$.report`.
    """
    if (request.valid_node_ids is None) == (request.dashboard is None):
        message = "give exactly one of validNodeIds or dashboard"
        raise InvalidInput(message, [ErrorDetail(path="$.validNodeIds", message=message)], status_code=422)
    if request.dashboard is not None:
        check_dashboard(request.dashboard)
    check_report_size(request.report)


async def run_report(
    graph: Any, context: AgentContext, kind: ReportKind, request: ProposalRunRequest
) -> ProposalRunResponse:
    """Generate, validate (self-correcting) and render one Organizer or Advisor report.

    The dashboard is flattened here, once, and handed to the graph with the number of generations
    allowed (re-asking the deterministic engine would only repeat its answer).
    """
    corrections = request.constraints.max_corrections if context.llm is not None else 0
    run = ProposalRun(
        kind=kind,
        request=request,
        request_id=context.request_id,
        board=board_from_dashboard(request.dashboard),
        max_attempts=1 + corrections,
    )
    outcome: ProposalRunResponse = await run_to_output(graph, {"run": run}, context)
    return outcome


async def run_organizer(graph: Any, context: AgentContext, request: ProposalRunRequest, prior: None) -> Any:
    """The Organizer: decomposition, grouping and relation proposals."""
    return await run_report(graph, context, "organizer", request)


async def run_advisor(graph: Any, context: AgentContext, request: ProposalRunRequest, prior: None) -> Any:
    """The Advisor: two or more options for one node."""
    return await run_report(graph, context, "advisor", request)


async def validate(
    graph: None, context: AgentContext, request: ProposalValidateRequest, prior: None
) -> ProposalValidateResponse:
    """Check a report produced anywhere with the same rules the run endpoints use (seed 004 §6, 案 B).

    The verdict comes from the rules alone, so the usage names the embedded engine and no model call.
    """
    size = board_size(request.dashboard) if request.dashboard is not None else len(request.valid_node_ids or [])
    verdict = await off_loop_when_large(size, partial(_verdict, request))
    return ProposalValidateResponse(
        request_id=context.request_id,
        ok=verdict.ok,
        errors=verdict.errors,
        warnings=verdict.warnings,
        usage=Usage(engine="heuristic"),
    )


def _verdict(request: ProposalValidateRequest) -> ValidationResult:
    """The rules' verdict on the request's report, with the mix-ups `board_agreement` finds when the board is given."""
    board = board_from_dashboard(request.dashboard) if request.dashboard is not None else None
    valid_ids = board.ids if board is not None else request.valid_node_ids or []
    warnings = board_disagreements(request.kind, request.report, board) if board is not None else []
    return validate_report(request.kind, request.report, valid_ids, warnings=warnings)


def check_report_size(report: object, path: str = "$.report") -> None:
    """Refuse a report nested deeper than `MAX_REPORT_DEPTH` or bigger than `MAX_REPORT_BYTES` as JSON.

    Raises:
        InvalidInput: HTTP 413 with `path` in the details.
    """
    depth = _depth(report)
    if depth > MAX_REPORT_DEPTH:
        message = f"the report nests more than {MAX_REPORT_DEPTH} levels deep"
    else:
        size = len(msgspec.json.encode(report))
        if size <= MAX_REPORT_BYTES:
            return
        message = f"the report is {size} bytes as JSON; at most {MAX_REPORT_BYTES} are allowed"
    raise InvalidInput(message, [ErrorDetail(path=path, message=message)], status_code=413)


def _depth(value: object) -> int:
    """Nesting depth of a JSON value (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_REPORT_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


ORGANIZER: AgentSpec[ProposalRunRequest, None] = AgentSpec(
    name="organizer",
    request_type=ProposalRunRequest,
    response_type=ProposalRunResponse | ErrorResponse,
    graph="proposal_quality",
    check=check_run,
    run=run_organizer,
)
ADVISOR: AgentSpec[ProposalRunRequest, None] = AgentSpec(
    name="advisor",
    request_type=ProposalRunRequest,
    response_type=ProposalRunResponse | ErrorResponse,
    graph="proposal_quality",
    check=check_run,
    run=run_advisor,
)
VALIDATE: AgentSpec[ProposalValidateRequest, None] = AgentSpec(
    name="proposal_validate",
    request_type=ProposalValidateRequest,
    response_type=ProposalValidateResponse | ErrorResponse,
    check=check_validate,
    run=validate,
    timeout_ms=lambda request: None,
)
