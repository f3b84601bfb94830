"""Proposal quality (seed 004 §6–7): validate a report, or have the Organizer / Advisor write one that passes."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response

from contracts.common import ErrorResponse
from contracts.proposal_quality import ProposalRunResponse, ProposalValidateResponse
from graphs.proposal_quality import run as proposals
from librarian_svc.request_runner import agent_post, run_agent

RUN_DESCRIPTION = (
    "Body: `{dashboard, focusNodeId?, userIntent?, constraints?}`; `dashboard` is `GET /api/dashboard`'s "
    "`{trays}` and the valid node ids are taken from it. The report is generated, validated (Must rules → "
    "`errors`, Should rules → `warnings`) and, while it has errors, sent back with them for correction (at most "
    "`constraints.max_corrections` ≤ 2 re-asks). `rendered` is present only when `ok`. TIMEOUT and "
    "MODEL_FAILURE are HTTP 200 with `action: ERROR`; contract violations are 4xx INVALID_INPUT."
)


class ProposalQualityController(Controller):
    """The Organizer and Advisor behind one quality gate: JSON → validator → self-correction → render."""

    path = "/api"
    tags = ["proposal-quality"]  # noqa: RUF012 - Litestar reads this class attribute

    @agent_post(
        "/proposal-quality/validate",
        proposals.VALIDATE,
        operation_id="proposalQualityValidate",
        summary="Validate an Organizer or Advisor report: {ok, errors, warnings}",
        description=(
            "Body: `{kind: organizer|advisor, report, validNodeIds}` or, instead of `validNodeIds`, a `dashboard` "
            "to take the ids from. `ok` is true exactly when no Must rule is broken; Should rules only warn."
        ),
    )
    async def validate(self, request: Request[Any, Any, Any]) -> Response[ProposalValidateResponse | ErrorResponse]:
        """Decode → check → the rules' verdict."""
        return await run_agent(request)

    @agent_post(
        "/organizer/run",
        proposals.ORGANIZER,
        operation_id="organizerRun",
        summary="Organizer: decomposition, grouping and relation proposals that pass the quality gate",
        description=RUN_DESCRIPTION,
    )
    async def organizer(self, request: Request[Any, Any, Any]) -> Response[ProposalRunResponse | ErrorResponse]:
        """Decode → check → one Organizer run → the report and its verdict."""
        return await run_agent(request)

    @agent_post(
        "/advisor/run",
        proposals.ADVISOR,
        operation_id="advisorRun",
        summary="Advisor: two or more options for one node that pass the quality gate",
        description=RUN_DESCRIPTION,
    )
    async def advisor(self, request: Request[Any, Any, Any]) -> Response[ProposalRunResponse | ErrorResponse]:
        """Decode → check → one Advisor run → the report and its verdict."""
        return await run_agent(request)
