"""The Litestar application factory: routes, error mapping, middleware, OpenAPI, DI.

`create_app()` is the one place routers are registered. Settings are read and validated
before anything else, so misconfiguration stops the process at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import RedocRenderPlugin, SwaggerRenderPlugin
from litestar.types import ControllerRouterHandler

from graphs.embeddings.factory import aclose_embeddings
from graphs.llm.providers import aclose_chat_model
from librarian_svc import openapi
from librarian_svc.controllers.ace import AceController, PlaybookController, WorkflowController
from librarian_svc.controllers.grace import GraceController
from librarian_svc.controllers.health import HealthController
from librarian_svc.controllers.librarian import LibrarianController
from librarian_svc.controllers.proposal_quality import ProposalQualityController
from librarian_svc.errors import EXCEPTION_HANDLERS
from librarian_svc.head_requests import answer_head_as_get, methods_by_path
from librarian_svc.instance_readiness import WorkersServing
from librarian_svc.memory_budget import admission_middleware
from librarian_svc.request_context import make_request_context_middleware
from librarian_svc.request_runner import SERVICES_KEY, SPEC_KEY, WORKERS_SERVING_KEY
from librarian_svc.services import Services, build_services
from librarian_svc.settings import Settings, load_settings
from librarian_svc.version import VERSION

ROUTE_HANDLERS: list[ControllerRouterHandler] = [
    HealthController,
    LibrarianController,
    AceController,
    WorkflowController,
    PlaybookController,
    GraceController,
    ProposalQualityController,
]

OPENAPI_DESCRIPTION = (
    "Stateless agent microservice. Each agent endpoint runs one step; the agent's state travels in the "
    "request and the response (`state`), so any instance can serve any step. Every error has the same body: "
    "`{action: ERROR, request_id, error_type, message, details}`."
)


def create_app(
    settings: Settings | None = None,
    *,
    services: Services | None = None,
    extra_route_handlers: Sequence[ControllerRouterHandler] = (),
) -> Litestar:
    """Build the app; `settings` default to the environment, `services` to ones built from the settings."""
    settings = settings or load_settings()
    services = services or build_services(settings)

    def provide_services() -> Services:
        return services

    async def close_model_clients() -> None:
        # The provider clients hold connection pools bound to the serving event loop.
        await aclose_chat_model(services.context.llm)
        await aclose_embeddings(services.context.embeddings)

    app = Litestar(
        route_handlers=[*ROUTE_HANDLERS, *extra_route_handlers],
        # Agent routes read the services from the state (`services_of`); the dependency serves `/ready`.
        state=State({SERVICES_KEY: services, WORKERS_SERVING_KEY: WorkersServing.from_environment()}),
        dependencies={"services": Provide(provide_services, use_cache=True, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,
        # Route middleware runs after routing and before the handler reads the body: heavy requests wait
        # for memory there, their bodies still unread (`librarian_svc/memory_budget.py`).
        middleware=[
            admission_middleware(
                services.memory,
                max_body_bytes=settings.max_body_bytes,
                max_wait_s=settings.request_timeout_ms / 1000,
                min_body_rate_kb_s=settings.min_body_rate_kb_s,
                spec_key=SPEC_KEY,
            )
        ],
        on_shutdown=[close_model_clients],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="librarian-svc",
            version=VERSION,
            description=OPENAPI_DESCRIPTION,
            path="/schema",
            render_plugins=[RedocRenderPlugin(), SwaggerRenderPlugin()],
        ),
        logging_config=None,
        debug=False,
    )
    # Outermost, around routing and exception handling, so 404/405 and errors get the request id
    # and an access line too (Litestar's `middleware=` only wraps matched route handlers).
    openapi.install(app)
    app.asgi_handler = make_request_context_middleware(settings.google_cloud_project)(
        answer_head_as_get(app.asgi_handler, methods_by_path(app.routes))
    )
    return app
