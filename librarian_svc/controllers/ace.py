"""ACE endpoints: the agents, seed 000 §11's workflow, and the stored playbooks as official ACE text.

`POST /agent/ace/{search,generate,reflect,curate}`, `POST /workflow/run`, `PUT`/`GET /playbooks/{dataset}`
and `GET /playbooks`. The agents are stateless: the playbook comes in the request and the updated
playbook goes out. Every handler names its operation; the request runner decodes, checks, runs it under
the request's deadline and maps failures.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response

from contracts.ace import (
    AceCurateResponse,
    AceGenerateResponse,
    AceReflectResponse,
    AceSearchResponse,
    PlaybookImportResponse,
    PlaybookListResponse,
    WorkflowRunResponse,
)
from graphs.ace import run as ace
from librarian_svc.request_runner import agent_post, agent_route, run_agent

AGENT_DESCRIPTION = (
    "Agent-level failures (TIMEOUT, MODEL_FAILURE) are HTTP 200 with `action: ERROR`; contract violations "
    "(bad JSON, schema, duplicate bullet ids, negative counters, unknown sections, deltas or evaluations "
    "naming bullets that are not in the playbook) are 4xx with `error_type: INVALID_INPUT`."
)


class AceController(Controller):
    """The playbook agents: search, Generator, Reflector, Curator."""

    path = "/agent/ace"
    tags = ["ace"]  # noqa: RUF012 - Litestar reads this class attribute

    @agent_post(
        "/search",
        ace.SEARCH,
        operation_id="aceSearch",
        summary="Hybrid (vector + BM25) search over the playbook in the request",
        description="Results best first, at most `query.top_k`, filtered by section and confidence. "
        + AGENT_DESCRIPTION,
    )
    async def search(self, request: Request[Any, Any, Any]) -> Response[AceSearchResponse]:
        """Decode → search → results."""
        return await run_agent(request)

    @agent_post(
        "/generate",
        ace.GENERATE,
        operation_id="aceGenerate",
        summary="Answer a query with the playbook's most relevant bullets",
        description="Returns the answer, the trajectory (used bullets, reasoning steps) to send to /reflect, and "
        "the search results it was built from. " + AGENT_DESCRIPTION,
    )
    async def generate(self, request: Request[Any, Any, Any]) -> Response[AceGenerateResponse]:
        """Decode → generator graph → answer."""
        return await run_agent(request)

    @agent_post(
        "/reflect",
        ace.REFLECT,
        operation_id="aceReflect",
        summary="Reflect on a trajectory: insights and an evaluation of every used bullet",
        description="Ids the trajectory used that are not in the playbook are skipped (listed in "
        "`skipped_bullet_ids`). If the model fails, the reflection is empty and `model_problem` says why "
        "(seed 001). " + AGENT_DESCRIPTION,
    )
    async def reflect(self, request: Request[Any, Any, Any]) -> Response[AceReflectResponse]:
        """Decode → reflector graph → reflection."""
        return await run_agent(request)

    @agent_post(
        "/curate",
        ace.CURATE,
        operation_id="aceCurate",
        summary="Turn a reflection into delta items and return the updated playbook",
        description="Counters from the evaluations, then the caller's `deltas`, then the curator's own, merged "
        "deterministically (new ids `<section-prefix>-<nnnnn>`, never reused; near-duplicate ADDs become "
        "UPDATEs; optional `max_bullets` budget). " + AGENT_DESCRIPTION,
    )
    async def curate(self, request: Request[Any, Any, Any]) -> Response[AceCurateResponse]:
        """Decode → curator graph → deltas and the new playbook."""
        return await run_agent(request)


class WorkflowController(Controller):
    """Seed 000 §11: the whole ACE loop over the stored playbook of a dataset."""

    path = "/workflow"
    tags = ["ace"]  # noqa: RUF012 - Litestar reads this class attribute

    @agent_post(
        "/run",
        ace.WORKFLOW,
        operation_id="workflowRun",
        summary="Load the dataset's stored playbook → search → generate (→ reflect → curate → save)",
        description="Reads `PLAYBOOK_DATA_DIR/<dataset>.json` (missing: an empty playbook). With `ground_truth` or "
        "`test_report` the run reflects and curates; with `save: true` the curated playbook replaces the stored "
        "one atomically. A stored playbook that is corrupt is HTTP 500 with `error_type: OTHER` and a message "
        "naming the problem. " + AGENT_DESCRIPTION,
    )
    async def run(self, request: Request[Any, Any, Any]) -> Response[WorkflowRunResponse]:
        """Decode → workflow graph → seed 000's response (or the store's problem as a 500)."""
        return await run_agent(request)


class PlaybookController(Controller):
    """The stored playbooks (`PLAYBOOK_DATA_DIR/<dataset>.json`) in and out as official ACE text."""

    path = "/playbooks"
    tags = ["ace"]  # noqa: RUF012 - Litestar reads this class attribute

    @agent_route(
        "/{dataset:str}",
        ace.IMPORT,
        method="PUT",
        operation_id="playbookImport",
        summary="Store a playbook given in the official ACE text format (`## SECTION`, `[id] content`)",
        description="The body is the text (`Content-Type: text/plain; charset=utf-8`; `\\r\\n` line endings and a "
        "byte-order mark are fine). The same checks as `python -m graphs.ace import`: it must parse, and every "
        "bullet's section must be one the dataset allows (400 naming the line). A text with no bullets would "
        "empty the stored playbook and is refused (400) unless `allow_empty=true`. Replaces the stored playbook "
        "under its lock; the id high-water mark never goes down, so ids of dropped bullets are not issued again.",
    )
    async def put(self, request: Request[Any, Any, Any]) -> Response[PlaybookImportResponse]:
        """Text → checks → stored."""
        return await run_agent(request)

    @agent_route(
        "/{dataset:str}",
        ace.EXPORT,
        method="GET",
        operation_id="playbookExport",
        summary="The stored playbook of a dataset in the official ACE text format",
        description="`text/plain`, the format `PUT` takes and `python -m graphs.ace export` writes. A dataset "
        "with no stored playbook is 404; a stored file that is corrupt is 500 (`error_type: OTHER`).",
    )
    async def get(self, request: Request[Any, Any, Any]) -> Response[str]:
        """Stored → text."""
        return await run_agent(request)

    @agent_route(
        "/",
        ace.LIST,
        method="GET",
        operation_id="playbookList",
        summary="The datasets that have a stored playbook",
    )
    async def list(self, request: Request[Any, Any, Any]) -> Response[PlaybookListResponse]:
        """Names, sorted."""
        return await run_agent(request)
