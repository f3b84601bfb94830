"""Token accounting for one chat-model reply, in the wire `Usage` type the orchestrator bills from."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from contracts.common import EngineName, Usage


def usage_from_message(msg: AIMessage, *, engine: EngineName, model: str | None) -> Usage:
    """The usage of the one call that produced `msg`.

    Providers that report no token counts (some OpenAI-compatible servers) still count as one call,
    with zero tokens, so `llm_calls` stays truthful when usages are summed with `Usage.plus`.
    """
    meta = msg.usage_metadata
    if not meta:
        return Usage(engine=engine, model=model, llm_calls=1)
    input_tokens = int(meta.get("input_tokens") or 0)
    output_tokens = int(meta.get("output_tokens") or 0)
    return Usage(
        engine=engine,
        model=model,
        llm_calls=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=int(meta.get("total_tokens") or input_tokens + output_tokens),
    )
