"""`CHAT_MODULES` and `EMBEDDING_MODULES` say what each provider's arm imports, so the fork server imports it ahead.

Each provider is built in a fresh interpreter: without the listed modules loaded first, building it must
load every one of them (none listed for nothing); with them loaded first, it must load little more (no
heavy SDK left out, which each worker would then import after the fork). Vertex AI needs credentials
this machine does not have: its modules are only checked to import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import get_args

import pytest

from graphs.embeddings.factory import EMBEDDING_MODULES
from graphs.llm.config import EmbeddingProviderName, LLMProviderName
from graphs.llm.providers import CHAT_MODULES
from tests.support.fresh_interpreter import last_json_line, run_script
from tests.support.live_service import PROJECT_ROOT

LEFT_FOR_THE_WORKER = 100
"""Modules a build may still load with the listed ones loaded first: the HTTP client's own lazy imports
(53-62 for the OpenAI SDK's). Leaving an SDK out leaves hundreds (about 700 for OpenAI's)."""

ENV = {
    "OPENAI_API_KEY": "k",
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "LLM_MODEL": "m",
    "GOOGLE_API_KEY": "k",
    "AZURE_OPENAI_API_KEY": "k",
    "AZURE_OPENAI_ENDPOINT": "https://example.invalid",
    "AZURE_OPENAI_DEPLOYMENT": "d",
    "EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1",
    "EMBEDDING_MODEL": "e",
}

SCRIPT = """
import importlib, json, sys
from librarian_svc.settings import load_settings
from graphs.llm.providers import make_chat_model
from graphs.embeddings.factory import make_embeddings
kind, provider, preload, env = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
for name in preload:
    importlib.import_module(name)
before = set(sys.modules)
variable = "LLM_PROVIDER" if kind == "chat" else "EMBEDDING_PROVIDER"
settings = load_settings(env | {variable: provider})
make_chat_model(settings.llm) if kind == "chat" else make_embeddings(settings.embedding)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def loaded_by_build(kind: str, provider: str, preload: tuple[str, ...]) -> list[str]:
    """The modules building `provider`'s client loads, in a fresh interpreter with `preload` loaded first."""
    return list(last_json_line(SCRIPT, kind, provider, json.dumps(preload), json.dumps(ENV), env=None))


CASES = [("chat", name, modules) for name, modules in CHAT_MODULES.items()] + [
    ("embedding", name, modules) for name, modules in EMBEDDING_MODULES.items()
]


def test_every_provider_has_its_list() -> None:
    """A provider added without its list would be preloaded with nothing (a slower start, not an error)."""
    assert set(CHAT_MODULES) == set(get_args(LLMProviderName))
    assert set(EMBEDDING_MODULES) == set(get_args(EmbeddingProviderName))


def test_a_preload_that_fails_leaves_the_fork_server_up(tmp_path: Path) -> None:
    """Anything but an ImportError would take the fork server, and the supervisor's start, down with it."""
    (tmp_path / "broken_sdk.py").write_text("raise KeyError('not what the preload expected')\n")
    script = (
        "import graphs.llm.providers as providers\n"
        "providers.CHAT_MODULES['heuristic'] = ('broken_sdk',)\n"
        "import librarian_svc.worker_preload\n"
        "print('up')\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{PROJECT_ROOT}{os.pathsep}{tmp_path}", "LLM_PROVIDER": "heuristic"}
    done = run_script(script, env=env)
    assert done.stdout.strip() == "up"
    assert "worker preload stopped early" in done.stderr
    assert "not what the preload expected" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "provider", "modules"), CASES, ids=[f"{k}-{p}" for k, p, _ in CASES])
def test_the_listed_modules_are_what_the_build_loads(kind: str, provider: str, modules: tuple[str, ...]) -> None:
    if provider == "vertex":
        for name in modules:
            __import__(name)
        return
    base = ("librarian_svc.settings", "graphs.llm.providers", "graphs.embeddings.factory")
    alone = loaded_by_build(kind, provider, base)
    assert set(modules) <= set(alone), f"listed but not loaded by the build: {set(modules) - set(alone)}"
    after = loaded_by_build(kind, provider, base + modules)
    assert len(after) <= LEFT_FOR_THE_WORKER, after
