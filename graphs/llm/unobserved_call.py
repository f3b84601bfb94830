"""Ask a chat model straight through its provider call when nothing would observe langchain-core's run of it.

`BaseChatModel.ainvoke` wraps the provider call (`_agenerate`, which each integration implements) in a
run: it configures a callback manager, opens an LLM run (`on_chat_model_start`), runs the call as its own
task (`asyncio.gather`), checks the cache and the rate limiter, closes the run (`on_llm_end`, a shielded
task per run manager) and copies the reply's metadata. With no handler attached (no tracer, no
callbacks, not verbose), no cache and no rate limiter, all of that is bookkeeping nobody reads, and it is
paid on every call (issue 14 item 3): a model-backed think step takes 17 event-loop turns instead of 23,
each one a wait behind every other request on a busy worker, and 0.1-0.35 ms less CPU in-process
(`python -m bench.model_step_cpu --library-run`, either provider), more under load, where the extra
tasks crowd the loop (`bench.librarian_concurrency`).

`reply` takes the provider call directly only in that case, decided per call with langchain-core's own
callback configuration, so a tracer switched on by the environment (LangSmith), a handler passed in a
run's config, `verbose` or a configure hook all send the call back through `ainvoke`. So do a cache, a
rate limiter, streaming, the v1 output format, a run config or structured-output tracing keys passed to
`reply`, and messages whose content is not plain text: what langchain-core does for those is not
reproduced here. What the direct call does reproduce is what `_agenerate_with_cache` does to a plain
reply: the generation's info (less the LangSmith gateway's) and the provider's `llm_output` merged into
the message's `response_metadata` (tests compare the two paths' replies field by field, per provider, so
a change in langchain-core shows). The one difference: the reply has no run id (`id` stays as the
provider set it), as there is no run.

The provider call runs on a task of its own through `asyncio.gather`, as `agenerate` runs it, which also
keeps the library's cancellation rule (a deadline holds even if the provider's code swallows the
cancellation). Awaited inline on the graph node's task instead, Gemini's calls (google-genai over
aiohttp) took longer under load while the OpenAI family's did not: 160 Gemini sessions on two workers
kept 0.70 / 0.74 of the bound inline against 0.81 / 0.84 on a task and 0.79 / 0.81 through `ainvoke`, in
alternating runs of `python -m bench.librarian_concurrency --provider gemini --workers 2 --concurrency
160`. Why was not found; the gathered task costs three turns (inline a step took 14) and ~20 µs. Those runs
predate `graphs.llm.gemini_request`, when google-genai's session still looked up netrc and the proxy on worker
threads before every request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.globals import get_llm_cache
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, ensure_config
from langchain_core.utils._gateway import GATEWAY_METADATA_RESPONSE_KEY

LIBRARY_KEYS = frozenset({"config", "ls_structured_output_format", "structured_output_format"})
"""Keyword arguments `ainvoke` itself reads (a run config, structured-output tracing) rather than handing them
to the provider: a call carrying them goes through `ainvoke`."""


async def reply(
    model: Runnable[LanguageModelInput, BaseMessage], messages: Sequence[BaseMessage], **kwargs: Any
) -> BaseMessage:
    """`model.ainvoke(messages, **kwargs)`'s reply, through the provider call alone when no one observes the run."""
    if not isinstance(model, BaseChatModel) or not unobserved(model, messages, kwargs):
        return await model.ainvoke(list(messages), **kwargs)
    # The provider call every integration implements, on a task of its own through `asyncio.gather`, as
    # `agenerate` runs it (see above): a cancellation the provider's code swallowed is still raised.
    (result,) = await asyncio.gather(model._agenerate(list(messages), **kwargs))
    for generation in result.generations:
        info = generation.generation_info or {}
        generation.message.response_metadata = {
            **{key: value for key, value in info.items() if key != GATEWAY_METADATA_RESPONSE_KEY},
            **generation.message.response_metadata,
        }
    first = result.generations[0].message
    if len(result.generations) == 1 and result.llm_output is not None:
        first.response_metadata = {**result.llm_output, **first.response_metadata}
    return first


def unobserved(model: BaseChatModel, messages: Sequence[BaseMessage], kwargs: dict[str, Any]) -> bool:
    """Whether `ainvoke` would only wrap the provider call: no handler, cache, rate limiter, stream or conversion."""
    if LIBRARY_KEYS & kwargs.keys() or model.rate_limiter is not None or model.output_version == "v1":
        return False
    if not (model.cache is False or (model.cache is None and get_llm_cache() is None)):
        return False
    if not all(isinstance(message.content, str) for message in messages):
        return False
    if model._should_stream(async_api=True, run_manager=None, **kwargs):  # the test ainvoke itself makes
        return False
    config = ensure_config()
    manager = AsyncCallbackManager.configure(
        config.get("callbacks"),
        model.callbacks,
        model.verbose,
        config.get("tags"),
        model.tags,
        config.get("metadata"),
        model.metadata,
    )
    return not manager.handlers and not manager.inheritable_handlers
