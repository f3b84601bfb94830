"""An `AgentContext` for tests that call graph code directly, with the service's own defaults.

The options come from `load_settings` (so from `ENV_DEFAULTS`, the one place defaults live); the
embedded engine and the hashing embedder unless a test overrides them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from graphs.context import AgentContext
from graphs.embeddings.hashing import HashingEmbeddings
from librarian_svc.services import agent_context
from librarian_svc.settings import load_settings


def make_context(**overrides: Any) -> AgentContext:
    """The service's context with no model (`llm=None`) and the hashing embedder; `overrides` replace fields."""
    settings = load_settings({"LLM_PROVIDER": "heuristic", "EMBEDDING_PROVIDER": "hashing"})
    context = agent_context(settings, llm=None, embeddings=HashingEmbeddings())
    return dataclasses.replace(context, **overrides) if overrides else context
