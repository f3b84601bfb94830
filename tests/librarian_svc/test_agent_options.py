"""Typed per-agent options: read once from the environment into the context, defaults from ENV_DEFAULTS only."""

from __future__ import annotations

import os
from pathlib import Path

from graphs.context import AceOptions, LibrarianOptions
from graphs.embeddings.hashing import HashingEmbeddings
from librarian_svc.services import agent_context
from librarian_svc.settings import ENV_DEFAULTS, load_settings


def test_the_options_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "LIBRARIAN_NEAR_DUP_THRESHOLD": "0.9",
        "ACE_DEDUP_THRESHOLD": "0.7",
        "SEARCH_ALPHA": "0.25",
        "PLAYBOOK_DATA_DIR": str(tmp_path),
    }
    context = agent_context(load_settings(env), llm=None, embeddings=HashingEmbeddings())
    assert context.librarian == LibrarianOptions(near_dup_threshold=0.9)
    assert context.ace == AceOptions(playbook_data_dir=tmp_path, dedup_threshold=0.7, search_alpha=0.25)


def test_unset_options_take_the_one_set_of_defaults() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ENV_DEFAULTS or k.startswith("LLM_")}
    context = agent_context(load_settings(env), llm=None, embeddings=HashingEmbeddings())
    assert context.librarian.near_dup_threshold == float(ENV_DEFAULTS["LIBRARIAN_NEAR_DUP_THRESHOLD"])
    assert context.ace.dedup_threshold == float(ENV_DEFAULTS["ACE_DEDUP_THRESHOLD"])
    assert context.ace.search_alpha == float(ENV_DEFAULTS["SEARCH_ALPHA"])
    assert context.ace.playbook_data_dir == Path(ENV_DEFAULTS["PLAYBOOK_DATA_DIR"])
