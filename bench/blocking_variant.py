"""The service with a deliberately blocking model call: the contrast for bench.librarian_concurrency.

`python -m bench.blocking_variant --blocking-model` runs `librarian_svc` unchanged except that every
chat-model call is made synchronously on the event loop (a naive `model.invoke(...)` inside an async
handler), so one slow model call stalls every other request of the worker. Never used in production.
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_core.language_models import BaseChatModel

from librarian_svc.__main__ import main


def _patch_blocking() -> None:
    async def blocking_ainvoke(self: BaseChatModel, *args: Any, **kwargs: Any) -> Any:
        return self.invoke(*args, **kwargs)

    BaseChatModel.ainvoke = blocking_ainvoke  # type: ignore[method-assign]


if __name__ == "__main__":
    if "--blocking-model" in sys.argv:
        _patch_blocking()
    sys.exit(main())
