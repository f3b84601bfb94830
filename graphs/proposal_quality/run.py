"""Entry points the controllers call: one run of the Organizer or Advisor graph, and the validate check.

Both take the request after msgspec decoded it; the limits a schema cannot express (the report's
overall size and depth, one source of valid ids) are checked here and raised as `InvalidInput`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.common import ErrorDetail, Usage
from contracts.proposal_quality import (
    ProposalRunRequest,
    ProposalRunResponse,
    ProposalValidateRequest,
    ProposalValidateResponse,
    ReportKind,
)
from graphs.context import AgentContext
from graphs.errors import InvalidInput
from graphs.proposal_quality.board import board_from_dashboard
from graphs.proposal_quality.validator import validate_report

MAX_REPORT_BYTES = 256 * 1024
"""A report to validate is at most this big as JSON; a real report is a few kilobytes."""
MAX_REPORT_DEPTH = 32
"""A report to validate nests at most this deep; the report types need five levels."""


async def run_report(
    graph: Any, context: AgentContext, kind: ReportKind, request: ProposalRunRequest, request_id: str
) -> ProposalRunResponse:
    """Generate, validate (self-correcting) and render one Organizer or Advisor report."""
    result = await graph.ainvoke({"kind": kind, "request": request, "request_id": request_id}, context=context)
    outcome: ProposalRunResponse = result["outcome"]
    return outcome


def validate_request(request: ProposalValidateRequest, request_id: str) -> ProposalValidateResponse:
    """Check a report produced anywhere with the same rules the run endpoints use (seed 004 §6, 案 B).

    The verdict comes from the rules alone, so the usage names the embedded engine and no model call.

    Raises:
        InvalidInput: Both or neither of `validNodeIds` and `dashboard`; a report too big or too deep.
    """
    if (request.valid_node_ids is None) == (request.dashboard is None):
        message = "give exactly one of validNodeIds or dashboard"
        raise InvalidInput(message, [ErrorDetail(path="$.validNodeIds", message=message)], status_code=422)
    check_report_size(request.report)
    if request.dashboard is not None:
        valid_ids: list[str] = board_from_dashboard(request.dashboard).ids
    else:
        valid_ids = request.valid_node_ids or []
    verdict = validate_report(request.kind, request.report, valid_ids)
    return ProposalValidateResponse(
        request_id=request_id,
        ok=verdict.ok,
        errors=verdict.errors,
        warnings=verdict.warnings,
        usage=Usage(engine="heuristic"),
    )


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
