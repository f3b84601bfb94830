"""Run one agent step under the request's deadline and map agent-level failures to ERROR bodies.

Deadline, model failure and timeout handling are the same for every agent, so controllers
stay a few lines: decode → `run_step` → encode. Agent-level outcomes are HTTP 200 with the
ERROR action (the exchange was well formed) and carry the request's state back, so the
caller can simply retry the step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog

from contracts.common import ErrorResponse
from contracts.state import StateEnvelope
from graphs.context import AgentContext
from graphs.llm.errors import ModelFailure, ModelTimeout
from librarian_svc.request_context import adopt_request_id
from librarian_svc.services import Services

R = TypeVar("R")

log = structlog.get_logger(__name__)


async def run_step(
    services: Services,
    scope: Any,
    *,
    request_id: str,
    timeout_ms: int | None,
    retry_state: StateEnvelope | None = None,
    step: Callable[[AgentContext], Awaitable[R]],
) -> R | ErrorResponse:
    """Run `step` with a per-request context; TIMEOUT / MODEL_FAILURE become ERROR bodies (HTTP 200)."""
    adopt_request_id(scope, request_id)
    context = services.request_context(timeout_ms)
    budget = context.remaining_s()
    try:
        async with asyncio.timeout(budget):
            return await step(context)
    except (TimeoutError, ModelTimeout) as exc:
        log.warning("step timed out", budget_s=budget, reason=str(exc) or "deadline")
        return ErrorResponse(
            request_id=request_id,
            error_type="TIMEOUT",
            message=f"the step did not finish within its {round((budget or 0) * 1000)} ms budget; "
            "retry with the same state",
            state=retry_state,
            usage=context.usage,
        )
    except ModelFailure as exc:
        log.warning("model failure", reason=str(exc))
        return ErrorResponse(
            request_id=request_id,
            error_type="MODEL_FAILURE",
            message=f"the language model failed: {exc}",
            state=retry_state,
            usage=context.usage,
        )
