"""The typed run context every agent graph receives (LangGraph `context_schema`).

Built once per process from settings (`base`) and specialised per request with that
request's deadline and a fresh usage meter, so nodes read their model, embedder, limits, options
and prompt directory from here instead of globals, and a test passes its own. Every option is a
required field: its default lives in `librarian_svc/settings.py` (ENV_DEFAULTS) and nowhere else.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from contracts.common import EngineName, Usage
from graphs.config_files import GraceConfig, SectionDefinition
from graphs.errors import DeadlineExceeded
from graphs.llm.config import LLMConfig
from graphs.llm.usage import UsageMeter
from graphs.shutdown import shutdown_deadline

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel

    ChatModel = BaseChatModel
    Embedder = Embeddings
else:
    # LangGraph resolves the context's annotations at run time; `Any` there keeps start-up from importing
    # LangChain's chat-model stack (tens of ms of cold start) just for a type hint.
    ChatModel = Any
    Embedder = Any

Checkpoint = Callable[[], Awaitable[None]]
"""Awaited between chunks of CPU work on the event loop: a `Budget`'s checkpoint (`AgentContext.checkpoint`)."""


class Budget(Protocol):
    """What bounds a request's CPU work: the request's `AgentContext` (its deadline), or `UNBOUNDED` outside one.

    The one type every bounded computation takes (index builds, the curator's merge, chunked generators
    through `graphs.chunked`), so a node passes its context and a benchmark or test passes `UNBOUNDED`.
    """

    def check_deadline(self) -> None:
        """Raise `DeadlineExceeded` once the budget is spent (safe on a worker thread)."""
        ...

    async def checkpoint(self) -> None:
        """Check, then yield to the event loop so other requests and `/health` are served."""
        ...


class Unbounded:
    """No deadline: for callers outside a request (benchmarks, the command line, tests)."""

    def check_deadline(self) -> None:
        """Never raises."""

    async def checkpoint(self) -> None:
        """Only yields."""
        await asyncio.sleep(0)


UNBOUNDED = Unbounded()


@dataclass(frozen=True, kw_only=True)
class LibrarianOptions:
    """The Librarian's knobs (`LIBRARIAN_NEAR_DUP_THRESHOLD`)."""

    near_dup_threshold: float
    """Character-shingle Jaccard at which two snippets count as near-duplicates."""


@dataclass(frozen=True, kw_only=True)
class AceOptions:
    """ACE's knobs (`PLAYBOOK_DATA_DIR`, `ACE_DEDUP_THRESHOLD`, `SEARCH_ALPHA`)."""

    playbook_data_dir: Path
    """Where `/workflow/run` keeps `<dataset>.json` playbooks (seed 000 §7's `data/playbooks`)."""
    dedup_threshold: float
    """Cosine at which a curator ADD counts as a near-duplicate of a bullet in its section."""
    search_alpha: float
    """Seed 000 §7: the weight of the vector score in hybrid search (BM25 gets 1 − α)."""


@dataclass(frozen=True, kw_only=True)
class AgentContext:
    """What a node may use: the chat model (None means the embedded heuristic engine), the embedder, config.

    `meter` is not an init field: every instance gets a fresh one, and `for_request` builds a new
    instance per request, so one request's spend never leaks into another's.
    """

    llm: ChatModel | None
    llm_config: LLMConfig
    embeddings: Embedder
    prompts_dir: Path
    config_dir: Path
    librarian: LibrarianOptions
    ace: AceOptions
    sections: dict[str, list[SectionDefinition]] = dataclasses.field(default_factory=dict)
    grace: GraceConfig = dataclasses.field(default_factory=GraceConfig)
    deadline: float | None = None
    request_id: str = ""
    seal_state: Callable[[Any], str] | None = None
    meter: UsageMeter = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meter", UsageMeter(self.llm_config.provider, self.llm_config.model))

    @property
    def engine(self) -> EngineName:
        """The configured engine: what produced an answer when the model's output was used."""
        return self.llm_config.provider

    def for_request(
        self, *, timeout_s: float, request_id: str = "", seal_state: Callable[[Any], str] | None = None
    ) -> AgentContext:
        """A copy for one request: its deadline, its id, its own usage meter, and how to seal its next state."""
        return dataclasses.replace(
            self, deadline=time.monotonic() + timeout_s, request_id=request_id, seal_state=seal_state
        )

    def seal(self, state: Any) -> str:
        """The opaque token for the agent's next state (the HTTP layer decides how tokens are signed)."""
        if self.seal_state is None:
            raise RuntimeError("this context was not made for a stateful agent's request (no seal_state)")
        return self.seal_state(state)

    def effective_deadline(self) -> float | None:
        """The request's deadline, or the process's shutdown deadline when that comes first (SIGTERM)."""
        stop = shutdown_deadline()
        if stop is None or (self.deadline is not None and self.deadline <= stop):
            return self.deadline
        return stop

    def remaining_s(self) -> float | None:
        """Seconds left before the (effective) deadline (None when unbounded)."""
        deadline = self.effective_deadline()
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def check_deadline(self) -> None:
        """Raise DeadlineExceeded once the budget is spent (or shutdown cut it); CPU loops call it between chunks.

        Safe from worker threads (it only reads the clock), so work moved off the event loop stops too.
        """
        deadline = self.effective_deadline()
        if deadline is not None and time.monotonic() >= deadline:
            raise DeadlineExceeded("the request's budget ran out during CPU work")

    async def checkpoint(self) -> None:
        """Between chunks of CPU work on the event loop: stop if the budget is spent, else let others run.

        Yielding keeps `/health` and the other requests answered while one request's long step runs.
        """
        self.check_deadline()
        await asyncio.sleep(0)

    @property
    def usage(self) -> Usage:
        """What this request has spent so far, as its response reports it."""
        return self.meter.usage
