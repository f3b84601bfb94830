"""Wire types every endpoint shares: the error body, usage accounting and health probes.

These sit at the bottom of the dependency graph (`contracts` <- `graphs` <- `librarian_svc`)
and import nothing but msgspec, so the Go side can be generated from their JSON Schemas.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.base import WireStruct
from contracts.state import StateToken

ErrorType = Literal["LOOP_LIMIT", "TIMEOUT", "INVALID_INPUT", "MODEL_FAILURE", "OTHER"]
"""Why a step could not produce a normal action (DESIGN.md §4)."""

EngineName = Literal["heuristic", "gemini", "vertex", "openai", "azure", "openai-compatible"]


class ErrorDetail(WireStruct):
    """One problem with the input: where it is (a JSON path) and what is wrong."""

    path: str = msgspec.field(default="$")
    message: str = ""


class ErrorResponse(WireStruct, tag_field="action", tag="ERROR"):
    """The one error body of every endpoint (DESIGN.md §4).

    Transport problems (malformed JSON, schema violations, bad state) come with a 4xx;
    agent-level outcomes (LOOP_LIMIT, TIMEOUT, MODEL_FAILURE) come with HTTP 200 because
    the exchange itself was well formed.
    """

    request_id: str
    error_type: ErrorType
    message: str
    details: list[ErrorDetail] = msgspec.field(default_factory=list)
    state: StateToken | None = None
    usage: Annotated[
        Usage | None,
        msgspec.Meta(description="What the step spent on the model before it failed (TIMEOUT, MODEL_FAILURE)."),
    ] = None


class Usage(WireStruct):
    """Which engine produced the answer and what the model cost, so the orchestrator can account for it.

    `engine` names what produced the answer: `heuristic` when no model is configured, and also when a
    model was configured but the embedded rules stood in for its output (`fallback` true, with the
    reason); `model` and the counts are then still the model's, because its calls were made and billed.
    `llm_calls` counts every request sent to the provider, transport retries and re-asks included.
    """

    engine: EngineName
    model: str | None = None
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    fallback: Annotated[
        bool, msgspec.Meta(description="The embedded rules stood in for a model's unusable or failed output.")
    ] = False
    fallback_reason: Annotated[
        str | None, msgspec.Meta(description="Why the rules stood in (agent and reason); null without a fallback.")
    ] = None

    def plus(self, other: Usage) -> Usage:
        """Sum two usages of the same engine (e.g. every attempt of a re-ask loop)."""
        return Usage(
            engine=self.engine,
            model=self.model or other.model,
            llm_calls=self.llm_calls + other.llm_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            fallback=self.fallback or other.fallback,
            fallback_reason=self.fallback_reason or other.fallback_reason,
        )


class HealthResponse(WireStruct):
    """Liveness: the process answers."""

    status: Literal["ok"] = "ok"


class ReadyResponse(WireStruct):
    """Readiness: graphs compiled and a provider configured."""

    status: Literal["ready", "not_ready"]
    engine: EngineName
    model: str | None
    embedding: str
    graphs: list[str]
    version: str
