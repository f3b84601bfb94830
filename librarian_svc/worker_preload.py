"""What the fork server imports once, before it forks any worker: the modules a worker needs to build and serve its app.

Workers used to be spawned: each started an interpreter and imported everything itself (about a
second of a worker's start), and carried its own copy of those modules. Forked from a fork server
that imported them once (`worker_process`), a worker starts sooner (a replacement, and an instance's
second worker) and shares the modules' pages with the other workers until it writes to them
(`python -m bench.workers --compare-spawn` measures both). The collector is paused while they load
and what they made is frozen, so the workers' collections neither walk nor touch those objects.

The model providers' SDKs are imported for the providers the configuration names (the fork server
inherits the supervisor's environment), and no other: a service configured for Gemini never loads the
OpenAI SDK. Nothing here builds a client or the app: each worker does that itself, after the fork.
"""

from __future__ import annotations

import gc
import importlib
import sys

from librarian_svc.startup_gc import collector_paused

PRELOADED = ("uvloop", "librarian_svc.app", "librarian_svc.workers")
"""What every worker imports whatever its configuration (agents, LangGraph, Litestar, uvicorn) comes with these."""


def provider_modules() -> tuple[str, ...]:
    """The SDK modules of the configured chat and embedding providers (none if the configuration is wrong).

    A configuration error is each worker's to report, once, as it builds its app; here it only means
    nothing more to import ahead.
    """
    from graphs.embeddings.factory import EMBEDDING_MODULES
    from graphs.llm.providers import CHAT_MODULES
    from librarian_svc.settings import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError:
        return ()
    return CHAT_MODULES.get(settings.llm.provider, ()) + EMBEDDING_MODULES.get(settings.embedding.provider, ())


def preload() -> None:
    """Import `PRELOADED` and the configured providers' SDKs with the collector paused, then freeze what they made.

    A failure only costs speed: the fork server must come up whatever happens here (multiprocessing lets
    an ImportError pass, and anything else would take the fork server, and the supervisor's start, down
    with it), and each worker imports what is missing and reports a real problem itself.
    """
    try:
        with collector_paused():
            for name in PRELOADED:
                importlib.import_module(name)
            for name in provider_modules():
                importlib.import_module(name)
    except Exception as exc:  # see above: the worker reports it
        print(f"worker preload stopped early: {exc!r}", file=sys.stderr)
    gc.freeze()


preload()
