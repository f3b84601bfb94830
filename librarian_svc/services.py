"""The process-wide objects every controller needs, built once at start-up.

Building them here (model client, embedder, compiled graphs, state codec) means a broken
configuration or graph fails the process at start, and readiness can report exactly what
is loaded. Nothing here holds per-session data: any instance can serve any step.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from graphs.ace.graph import GRAPH_BUILDERS as ACE_GRAPH_BUILDERS
from graphs.ace.playbook.store import PlaybookStore
from graphs.context import AceOptions, AgentContext, LibrarianOptions
from graphs.data_files import load_packaged_data
from graphs.embeddings.factory import describe, make_embeddings
from graphs.grace import graph as grace_graph
from graphs.librarian import graph as librarian_graph
from graphs.llm.providers import make_chat_model
from graphs.proposal_quality import graph as proposal_quality_graph
from librarian_svc.memory_budget import MemoryBudget
from librarian_svc.settings import Settings
from librarian_svc.state.token import StateCodec

log = structlog.get_logger(__name__)

GraphBuilder = Callable[[], Any]

# Each agent's `build_graph`; every graph is compiled once, at start-up.
GRAPH_BUILDERS: dict[str, GraphBuilder] = {
    "librarian": librarian_graph.build_graph,
    "grace": grace_graph.build_graph,
    "proposal_quality": proposal_quality_graph.build_graph,
    **ACE_GRAPH_BUILDERS,  # ace_generator, ace_reflector, ace_curator, ace_workflow
}


@dataclass(frozen=True)
class Services:
    """Everything a request handler may use; shared, immutable, stateless between requests."""

    settings: Settings
    context: AgentContext
    codec: StateCodec
    memory: MemoryBudget
    graphs: dict[str, Any] = field(default_factory=dict)

    def request_context(
        self,
        timeout_ms: int | None = None,
        *,
        request_id: str = "",
        seal_state: Callable[[Any], str] | None = None,
        waited_s: float = 0.0,
    ) -> AgentContext:
        """The agent context for one request: its deadline (never past the server's), id and state sealer.

        `waited_s`: how long the request waited for memory at the door; the budget counts from its arrival.
        """
        return self.context.for_request(
            timeout_s=max(0.0, self.budget_ms(timeout_ms) / 1000 - waited_s),
            request_id=request_id,
            seal_state=seal_state,
        )

    def budget_ms(self, timeout_ms: int | None = None) -> int:
        """A request's time budget from its arrival: its own `timeout_ms` up to the server's, else the server's."""
        return min(timeout_ms or self.settings.request_timeout_ms, self.settings.request_timeout_ms)


def _state_keys(settings: Settings) -> list[bytes]:
    """The configured keys, or an ephemeral one that only this process knows (said loudly: scale-out breaks)."""
    if settings.state.keys:
        return settings.state.keys
    log.warning(
        "STATE_SIGNING_KEYS is not set: state tokens are signed with an ephemeral key of this process. Other "
        "instances (scale-out, a restart, a new revision) cannot read them and will refuse every session in "
        "flight; set STATE_SIGNING_KEYS to a shared secret (cloudrun.yaml takes it from Secret Manager)",
        state_keys="ephemeral",
    )
    return [secrets.token_bytes(32)]


def agent_context(settings: Settings, *, llm: Any, embeddings: Any) -> AgentContext:
    """The process-wide agent context: the model and embedder given, every option typed from `settings`."""
    return AgentContext(
        llm=llm,
        llm_config=settings.llm,
        embeddings=embeddings,
        prompts_dir=settings.prompts_dir,
        config_dir=settings.config_dir,
        librarian=LibrarianOptions(near_dup_threshold=settings.librarian_near_dup_threshold),
        ace=AceOptions(
            playbook_data_dir=settings.playbook_data_dir,
            dedup_threshold=settings.ace_dedup_threshold,
            search_alpha=settings.search_alpha,
        ),
        sections=settings.sections,
        grace=settings.grace,
    )


def _warn_if_playbooks_cannot_be_saved(data_dir: Path) -> None:
    """Say at start-up, not at the first save, that `PLAYBOOK_DATA_DIR` cannot be written (reading it still works)."""
    reason = PlaybookStore(data_dir).unwritable_reason()
    if reason is not None:
        log.warning(
            "PLAYBOOK_DATA_DIR is not writable: saving a playbook will answer 500 (reading them works)",
            playbook_data_dir=str(data_dir),
            reason=reason,
        )


def build_services(settings: Settings) -> Services:
    """Create the model client, embedder, codec and compiled graphs; raise if any cannot be built."""
    load_packaged_data()  # ConfigError for a broken cue table or message file, before anything is served
    chat_model = make_chat_model(settings.llm)
    if chat_model is None:
        log.warning(
            "no LLM provider configured: using the embedded heuristic engine "
            "(set LLM_PROVIDER and its key to use a model)",
            engine="heuristic",
        )
    else:
        log.info("LLM provider configured", engine=settings.llm.provider, model=settings.llm.model)
    embeddings = make_embeddings(settings.embedding)
    log.info("embedder configured", embedding=describe(settings.embedding))
    _warn_if_playbooks_cannot_be_saved(settings.playbook_data_dir)
    context = agent_context(settings, llm=chat_model, embeddings=embeddings)
    graphs = {name: build() for name, build in GRAPH_BUILDERS.items()}
    codec = StateCodec(
        keys=_state_keys(settings), max_state_bytes=settings.state.max_state_bytes, ttl_s=settings.state.ttl_s
    )
    memory = MemoryBudget(settings.worker_memory_budget_mb)
    return Services(settings=settings, context=context, codec=codec, graphs=graphs, memory=memory)
