"""Token accounting: one reply's usage, and the per-request meter every model call adds to.

The meter lives on the request's `AgentContext` (a fresh one per request), so what a step spent is
known even when the step ends in an exception: TIMEOUT and MODEL_FAILURE bodies report it, and a
fallback to the embedded rules is reported with the model's calls still counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from contracts.common import EngineName, Usage

if TYPE_CHECKING:  # type-only: keeps the chat-model stack off the start-up import path
    from langchain_core.messages import AIMessage

log = structlog.get_logger(__name__)

MAX_REASON_CHARS = 500
"""`fallback_reason` is cut to this: it is for a human reading the response, not a log dump."""


def usage_from_message(msg: AIMessage, *, engine: EngineName, model: str | None, calls: int = 1) -> Usage:
    """The tokens of the reply `msg`, counted as `calls` provider requests.

    Providers that report no token counts (some OpenAI-compatible servers) give zero tokens; the
    request is still counted, so `llm_calls` stays truthful when usages are summed with `Usage.plus`.
    """
    meta = msg.usage_metadata
    if not meta:
        return Usage(engine=engine, model=model, llm_calls=calls)
    input_tokens = int(meta.get("input_tokens") or 0)
    output_tokens = int(meta.get("output_tokens") or 0)
    return Usage(
        engine=engine,
        model=model,
        llm_calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=int(meta.get("total_tokens") or input_tokens + output_tokens),
    )


class UsageMeter:
    """What one request has spent on the model so far, and whether the embedded rules had to stand in.

    Mutable on purpose and never shared between requests: `AgentContext.for_request` gives each
    request its own. Not thread-safe; a request's nodes run on one event loop.
    """

    def __init__(self, engine: EngineName, model: str | None) -> None:
        """Start at zero for `engine` (the configured provider) and `model`."""
        self.engine: EngineName = engine
        self.model = model
        self.spent = Usage(engine=engine, model=model)
        self.fallbacks: list[str] = []

    @property
    def calls(self) -> int:
        """Provider requests made so far (retries and re-asks included)."""
        return self.spent.llm_calls

    def add(self, usage: Usage) -> None:
        """Count calls and tokens (each attempt, as soon as it is made or answered)."""
        self.spent = self.spent.plus(usage)

    def fell_back(self, *, agent: str, reason: str, attempts: int | None = None) -> None:
        """Record, and log as a warning, that the embedded rules replaced the model's output.

        Args:
            agent: Which agent (and role) fell back, e.g. `librarian` or `ace.generator`.
            reason: Why: the reply's first problem, or the provider failure.
            attempts: Provider requests the failed exchange made (None when no exchange failed, e.g.
                the model's reply was fine but had nothing the step could use).
        """
        log.warning("embedded rules replaced the model's output", agent=agent, reason=reason, attempts=attempts)
        self.fallbacks.append(f"{agent}: {reason}")

    @property
    def usage(self) -> Usage:
        """The request's usage so far, as the response reports it (see `Usage` for the engine rule)."""
        if not self.fallbacks:
            return self.spent
        reason = "; ".join(dict.fromkeys(self.fallbacks))
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[: MAX_REASON_CHARS - 1] + "…"
        return Usage(
            engine="heuristic",
            model=self.model,
            llm_calls=self.spent.llm_calls,
            input_tokens=self.spent.input_tokens,
            output_tokens=self.spent.output_tokens,
            total_tokens=self.spent.total_tokens,
            fallback=True,
            fallback_reason=reason,
        )
