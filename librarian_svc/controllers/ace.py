"""ACE endpoints: `POST /agent/ace/{search,generate,reflect,curate}` and seed 000 §11's `POST /workflow/run`.

Stateless: the playbook comes in the request and the updated playbook goes out. Each handler decodes,
runs one agent step under the request's deadline (`run_step`: TIMEOUT / MODEL_FAILURE become HTTP 200
ERROR bodies) and returns the action; contract violations are 4xx INVALID_INPUT.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from contracts.ace import (
    AceCurateRequest,
    AceCurateResponse,
    AceGenerateRequest,
    AceGenerateResponse,
    AceReflectRequest,
    AceReflectResponse,
    AceSearchRequest,
    AceSearchResponse,
    WorkflowRequest,
    WorkflowResponse,
    WorkflowRunResponse,
)
from contracts.common import ErrorResponse
from graphs.ace import run as ace
from graphs.ace.playbook_store import PlaybookStoreError
from graphs.context import AgentContext
from librarian_svc.request_context import request_id_for
from librarian_svc.services import Services
from librarian_svc.step_runner import run_step

AGENT_DESCRIPTION = (
    "Agent-level failures (TIMEOUT, MODEL_FAILURE) are HTTP 200 with `action: ERROR`; contract violations "
    "(bad JSON, schema, duplicate bullet ids, negative counters, unknown sections, deltas or evaluations "
    "naming bullets that are not in the playbook) are 4xx with `error_type: INVALID_INPUT`."
)


class AceController(Controller):
    """The playbook agents: search, Generator, Reflector, Curator."""

    path = "/agent/ace"
    tags = ["ace"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/search",
        status_code=200,
        operation_id="aceSearch",
        summary="Hybrid (vector + BM25) search over the playbook in the request",
        description="Results best first, at most `query.top_k`, filtered by section and confidence. "
        + AGENT_DESCRIPTION,
    )
    async def search(
        self, data: JSONBody[AceSearchRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> AceSearchResponse:
        """Decode → search → results."""
        request_id = request_id_for(request.scope, data.request_id)

        return await run_step(
            services,
            request.scope,
            request_id=request_id,
            timeout_ms=data.constraints.timeout_ms,
            step=lambda context: ace.search(context, data, request_id),
        )

    @post(
        "/generate",
        status_code=200,
        operation_id="aceGenerate",
        summary="Answer a query with the playbook's most relevant bullets",
        description="Returns the answer, the trajectory (used bullets, reasoning steps) to send to /reflect, and "
        "the search results it was built from. " + AGENT_DESCRIPTION,
    )
    async def generate(
        self, data: JSONBody[AceGenerateRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> AceGenerateResponse:
        """Decode → generator graph → answer."""
        request_id = request_id_for(request.scope, data.request_id)

        return await run_step(
            services,
            request.scope,
            request_id=request_id,
            timeout_ms=data.constraints.timeout_ms,
            step=lambda context: ace.generate(services.graphs["ace_generator"], context, data, request_id),
        )

    @post(
        "/reflect",
        status_code=200,
        operation_id="aceReflect",
        summary="Reflect on a trajectory: insights and an evaluation of every used bullet",
        description="Ids the trajectory used that are not in the playbook are skipped (listed in "
        "`skipped_bullet_ids`). If the model fails, the reflection is empty and `model_problem` says why "
        "(seed 001). " + AGENT_DESCRIPTION,
    )
    async def reflect(
        self, data: JSONBody[AceReflectRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> AceReflectResponse:
        """Decode → reflector graph → reflection."""
        request_id = request_id_for(request.scope, data.request_id)

        return await run_step(
            services,
            request.scope,
            request_id=request_id,
            timeout_ms=data.constraints.timeout_ms,
            step=lambda context: ace.reflect(services.graphs["ace_reflector"], context, data, request_id),
        )

    @post(
        "/curate",
        status_code=200,
        operation_id="aceCurate",
        summary="Turn a reflection into delta items and return the updated playbook",
        description="Counters from the evaluations, then the caller's `deltas`, then the curator's own, merged "
        "deterministically (new ids `<section-prefix>-<nnnnn>`, never reused; near-duplicate ADDs become "
        "UPDATEs; optional `max_bullets` budget). " + AGENT_DESCRIPTION,
    )
    async def curate(
        self, data: JSONBody[AceCurateRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> AceCurateResponse:
        """Decode → curator graph → deltas and the new playbook."""
        request_id = request_id_for(request.scope, data.request_id)

        return await run_step(
            services,
            request.scope,
            request_id=request_id,
            timeout_ms=data.constraints.timeout_ms,
            step=lambda context: ace.curate(services.graphs["ace_curator"], context, data, request_id),
        )


class WorkflowController(Controller):
    """Seed 000 §11: the whole ACE loop over the stored playbook of a dataset."""

    path = "/workflow"
    tags = ["ace"]  # noqa: RUF012 - Litestar reads this class attribute

    @post(
        "/run",
        status_code=200,
        operation_id="workflowRun",
        summary="Load the dataset's stored playbook → search → generate (→ reflect → curate → save)",
        description="Reads `PLAYBOOK_DATA_DIR/<dataset>.json` (missing: an empty playbook). With `ground_truth` or "
        "`test_report` the run reflects and curates; with `save: true` the curated playbook replaces the stored "
        "one atomically. A stored playbook that is corrupt is HTTP 500 with `error_type: OTHER` and a message "
        "naming the problem. " + AGENT_DESCRIPTION,
    )
    async def run(
        self, data: JSONBody[WorkflowRequest], services: NamedDependency[Services], request: Request[Any, Any, Any]
    ) -> Response[WorkflowRunResponse]:
        """Decode → workflow graph → seed 000's response (or the store's problem as a 500)."""
        request_id = request_id_for(request.scope, data.request_id)

        async def step(context: AgentContext) -> WorkflowResponse:
            return await ace.run_workflow(services.graphs["ace_workflow"], context, data, request_id)

        try:
            body = await run_step(
                services,
                request.scope,
                request_id=request_id,
                timeout_ms=data.constraints.timeout_ms,
                retry_state=None,
                step=step,
            )
        except PlaybookStoreError as exc:
            problem = ErrorResponse(request_id=request_id, error_type="OTHER", message=str(exc))
            return Response(problem, status_code=HTTP_500_INTERNAL_SERVER_ERROR)
        return Response(body, status_code=200)
