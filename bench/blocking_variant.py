"""The service with a deliberately blocking model call: the contrast for bench.librarian_concurrency.

`python -m bench.blocking_variant --blocking-model` runs `librarian_svc` unchanged except that every
chat-model call is made synchronously on the event loop (a naive `model.invoke(...)` inside an async
handler), so one slow model call stalls every other request of the worker. Each worker's app factory
(`APP_FACTORY`) applies the patch, so it holds with any `WEB_CONCURRENCY`. Never used in production.

The patch replaces `graphs.llm.unobserved_call.reply`, the one function through which the service asks a
model (`structured_output.call_model`). Patching `BaseChatModel.ainvoke`, as this module did until
session 15, stopped blocking anything once `reply` took the provider call directly: the contrast then
reported ~0.99 of the bound at 8 sessions instead of ~1/8. `tests/bench/test_blocking_variant.py` checks,
through the service's own app, that the loop is held for the whole model call.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import graphs.llm.unobserved_call as unobserved_call

if TYPE_CHECKING:
    from langchain_core.language_models import LanguageModelInput
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable
    from litestar import Litestar

MODULE = "bench.blocking_variant"
APP_FACTORY = f"{MODULE}:create_app"


async def blocking_reply(
    model: Runnable[LanguageModelInput, BaseMessage], messages: Sequence[BaseMessage], **kwargs: Any
) -> BaseMessage:
    """`unobserved_call.reply` done wrong: the synchronous call, holding the event loop until the model answers."""
    return model.invoke(list(messages), **kwargs)


def patch_blocking() -> None:
    """Make every model call of this process block its event loop."""
    unobserved_call.reply = blocking_reply


def create_app() -> Litestar:
    """Each worker's app factory: the service's own, in a process whose model calls block."""
    from librarian_svc.workers import create_worker_app

    patch_blocking()
    return create_worker_app()


if __name__ == "__main__":
    from librarian_svc.__main__ import main

    sys.exit(main(APP_FACTORY if "--blocking-model" in sys.argv else None))
