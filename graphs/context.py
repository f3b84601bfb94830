"""The typed run context every agent graph receives (LangGraph `context_schema`).

Built once per process from settings (`base`) and specialised per request with that
request's deadline, so nodes read their model, embedder, limits and prompt directory from
here instead of globals, and a test passes its own.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contracts.common import Usage
from graphs.config_files import GraceConfig, SectionDefinition
from graphs.llm.config import LLMConfig

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


@dataclass(frozen=True, kw_only=True)
class AgentContext:
    """What a node may use: the chat model (None means the embedded heuristic engine), the embedder, config."""

    llm: ChatModel | None
    llm_config: LLMConfig
    embeddings: Embedder
    prompts_dir: Path
    config_dir: Path
    sections: dict[str, list[SectionDefinition]] = dataclasses.field(default_factory=dict)
    grace: GraceConfig = dataclasses.field(default_factory=GraceConfig)
    deadline: float | None = None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    request_id: str = ""
    seal_state: Callable[[Any], str] | None = None

    @property
    def engine(self) -> str:
        """The engine name reported in responses."""
        return self.llm_config.provider

    def with_deadline(self, timeout_s: float) -> AgentContext:
        """A copy for one request, whose monotonic deadline is `timeout_s` from now."""
        return dataclasses.replace(self, deadline=time.monotonic() + timeout_s)

    def for_request(
        self, *, timeout_s: float, request_id: str, seal_state: Callable[[Any], str] | None = None
    ) -> AgentContext:
        """A copy for one request: its deadline, its id, and how to seal the agent's next state into a token."""
        return dataclasses.replace(
            self, deadline=time.monotonic() + timeout_s, request_id=request_id, seal_state=seal_state
        )

    def seal(self, state: Any) -> str:
        """The opaque token for the agent's next state (the HTTP layer decides how tokens are signed)."""
        if self.seal_state is None:
            raise RuntimeError("this context was not made for a stateful agent's request (no seal_state)")
        return self.seal_state(state)

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline (None when unbounded)."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def empty_usage(self) -> Usage:
        """Usage for a step that made no model call."""
        return Usage(engine=self.llm_config.provider, model=self.llm_config.model)
