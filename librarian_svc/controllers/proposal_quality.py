"""Proposal quality (seed 004 §6–7): validate a report, or have the Organizer / Advisor write one that passes."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from contracts.common import ErrorResponse
from contracts.proposal_quality import (
    ProposalRunRequest,
    ProposalRunResponse,
    ProposalValidateRequest,
    ProposalValidateResponse,
    ReportKind,
)
from graphs.context import AgentContext
from graphs.proposal_quality.run import run_report, validate_request
from librarian_svc.request_context import request_id_for
from librarian_svc.services import Services
from librarian_svc.step_runner import run_step

AGENT = "proposal_quality"

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

    @post(
        "/proposal-quality/validate",
        status_code=200,
        operation_id="proposalQualityValidate",
        summary="Validate an Organizer or Advisor report: {ok, errors, warnings}",
        description=(
            "Body: `{kind: organizer|advisor, report, validNodeIds}` or, instead of `validNodeIds`, a `dashboard` "
            "to take the ids from. `ok` is true exactly when no Must rule is broken; Should rules only warn."
        ),
    )
    async def validate(
        self,
        data: JSONBody[ProposalValidateRequest],
        services: NamedDependency[Services],
        request: Request[Any, Any, Any],
    ) -> ProposalValidateResponse | ErrorResponse:
        """Decode → validate → the verdict."""
        request_id = request_id_for(request.scope, data.request_id)

        async def step(context: AgentContext) -> ProposalValidateResponse:
            return validate_request(data, request_id)

        return await run_step(
            services, request.scope, request_id=request_id, timeout_ms=None, retry_state=None, step=step
        )

    @post(
        "/organizer/run",
        status_code=200,
        operation_id="organizerRun",
        summary="Organizer: decomposition, grouping and relation proposals that pass the quality gate",
        description=RUN_DESCRIPTION,
    )
    async def organizer(
        self, data: JSONBody[ProposalRunRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> ProposalRunResponse | ErrorResponse:
        """Decode → one Organizer run → the report and its verdict."""
        return await _run("organizer", data, services, request)

    @post(
        "/advisor/run",
        status_code=200,
        operation_id="advisorRun",
        summary="Advisor: two or more options for one node that pass the quality gate",
        description=RUN_DESCRIPTION,
    )
    async def advisor(
        self, data: JSONBody[ProposalRunRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> ProposalRunResponse | ErrorResponse:
        """Decode → one Advisor run → the report and its verdict."""
        return await _run("advisor", data, services, request)


async def _run(
    kind: ReportKind, data: ProposalRunRequest, services: Services, request: Request[Any, Any, Any]
) -> ProposalRunResponse | ErrorResponse:
    request_id = request_id_for(request.scope, data.request_id)

    async def step(context: AgentContext) -> ProposalRunResponse:
        return await run_report(services.graphs[AGENT], context, kind, data, request_id)

    return await run_step(
        services,
        request.scope,
        request_id=request_id,
        timeout_ms=data.constraints.timeout_ms,
        retry_state=None,
        step=step,
    )
