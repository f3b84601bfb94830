"""Liveness and readiness probes for Cloud Run."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec

from contracts.common import HealthResponse, ReadyResponse
from graphs.embeddings.factory import describe
from librarian_svc.instance_readiness import WorkersServing
from librarian_svc.request_runner import WORKERS_SERVING_KEY
from librarian_svc.services import GRAPH_BUILDERS, Services
from librarian_svc.version import VERSION


class HealthController(Controller):
    """`/health` answers while the process runs; `/ready` once graphs and provider are loaded."""

    tags = ["operations"]  # noqa: RUF012 - Litestar reads this class attribute

    @get("/health", operation_id="health", summary="Liveness probe", sync_to_thread=False)
    def health(self) -> HealthResponse:
        """Always ok while the event loop answers."""
        return HealthResponse()

    @get(
        "/ready",
        operation_id="ready",
        summary="Readiness probe: graphs compiled, a provider configured, every worker serving",
        sync_to_thread=False,
        responses={503: ResponseSpec(data_container=ReadyResponse, description="Not ready yet")},
    )
    def ready(self, request: Request[Any, Any, Any], services: NamedDependency[Services]) -> Response[ReadyResponse]:
        """Ready when every registered agent graph is compiled and every worker of the instance serves; 503 otherwise.

        With several workers, ready only once all serve (`librarian_svc.instance_readiness`): traffic let in
        earlier would keep its connections on the first worker.
        """
        compiled = sorted(services.graphs)
        workers_serving: WorkersServing = request.app.state[WORKERS_SERVING_KEY]
        ok = set(compiled) == set(GRAPH_BUILDERS) and workers_serving()
        body = ReadyResponse(
            status="ready" if ok else "not_ready",
            engine=services.settings.llm.provider,
            model=services.settings.llm.model,
            embedding=describe(services.settings.embedding),
            graphs=compiled,
            version=VERSION,
        )
        return Response(body, status_code=200 if ok else 503)
