"""Wire types every endpoint shares: the error body, usage accounting and health probes.

These sit at the bottom of the dependency graph (`contracts` <- `graphs` <- `librarian_svc`)
and import nothing but msgspec, so the Go side can be generated from their JSON Schemas.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from contracts.base import WireStruct
from contracts.state import StateEnvelope

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
    state: StateEnvelope | None = None


class Usage(WireStruct):
    """Which engine answered and what it cost, so the orchestrator can account for it."""

    engine: EngineName
    model: str | None = None
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def plus(self, other: Usage) -> Usage:
        """Sum two usages of the same engine (e.g. every attempt of a re-ask loop)."""
        return Usage(
            engine=self.engine,
            model=self.model or other.model,
            llm_calls=self.llm_calls + other.llm_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
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
