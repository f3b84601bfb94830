"""Builders for ACE tests: bullets, playbooks, the real AppWorld playbooks, and an app with ACE mounted.

`ace_app` works before and after ACE is registered in `librarian_svc` (ROUTE_HANDLERS / GRAPH_BUILDERS):
it adds the controllers and graph builders only when they are missing, and passes ACE's options
(data directory, thresholds) through the run context either way.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import Bullet, Playbook
from graphs.ace.graph import GRAPH_BUILDERS as ACE_GRAPH_BUILDERS
from graphs.ace.playbook_text import parse_playbook
from librarian_svc.app import ROUTE_HANDLERS, create_app
from librarian_svc.controllers.ace import AceController, WorkflowController
from librarian_svc.services import GRAPH_BUILDERS, build_services
from librarian_svc.settings import load_settings

ACE_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "ace-appworld"
INITIAL = ACE_DATA / "appworld_initial_playbook.txt"
OFFLINE = ACE_DATA / "appworld_offline_trained_no_gt_playbook.txt"
ONLINE = ACE_DATA / "appworld_online_trained_playbook.txt"
REAL_PLAYBOOKS = [INITIAL, OFFLINE, ONLINE]


def read_text(path: Path) -> str:
    """A playbook file as written (no newline translation)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.read()


def real_playbook(path: Path = ONLINE) -> Playbook:
    """One of the real AppWorld playbooks, parsed."""
    return parse_playbook(read_text(path))


def bullet(bullet_id: str, content: str, section: str = "general", **fields: Any) -> Bullet:
    """A bullet with only what a test cares about."""
    return Bullet(id=bullet_id, section=section, content=content, **fields)


def playbook(*bullets: Bullet) -> Playbook:
    """A playbook of these bullets."""
    return Playbook(bullets=list(bullets))


def as_json(value: Any) -> Any:
    """A Struct as the JSON builtins a client would send."""
    return msgspec.to_builtins(value)


JAPANESE_PLAYBOOK = playbook(
    bullet("gen-00001", "東京タワーの高さは333メートルである。", keywords=["東京タワー"]),
    bullet("gen-00002", "富士山の標高は3776メートルで、日本一高い山である。"),
    bullet("gen-00003", "Always paginate: loop over page_index until an API returns an empty page."),
    bullet("gen-00004", "Use show_venmo_balance before approving a payment request."),
)
"""Mixed Japanese and English bullets in the permissive `default` dataset."""


def ace_options(data_dir: Path | None = None, **extra: Any) -> dict[str, Any]:
    """ACE's run-context options (what PLAYBOOK_DATA_DIR / ACE_DEDUP_THRESHOLD / SEARCH_ALPHA set)."""
    options: dict[str, Any] = dict(extra)
    if data_dir is not None:
        options["playbook_data_dir"] = str(data_dir)
    return options


def ace_app(env: Mapping[str, str] | None = None, options: Mapping[str, Any] | None = None) -> Litestar:
    """The service app with ACE mounted, built from the environment plus `env`, with ACE `options`."""
    settings = load_settings({**os.environ, **(env or {})})
    with mock.patch.dict(GRAPH_BUILDERS, {k: v for k, v in ACE_GRAPH_BUILDERS.items() if k not in GRAPH_BUILDERS}):
        services = build_services(settings)
    context = dataclasses.replace(services.context, options={**services.context.options, **(options or {})})
    services = dataclasses.replace(services, context=context)
    registered = AceController in ROUTE_HANDLERS and WorkflowController in ROUTE_HANDLERS
    extra = [] if registered else [AceController, WorkflowController]
    app = create_app(settings, services=services, extra_route_handlers=extra)
    app.on_shutdown.append(partial(close_embedder, services.context.embeddings))
    return app


async def close_embedder(embeddings: Any) -> None:
    """Close a Gemini embedder's connections on the loop that used them (the app closes only the chat model).

    ACE embeds through the provider (the Librarian's tests never do), so an unclosed google-genai client
    would otherwise surface as an unraisable ResourceWarning in a later test.
    """
    client = getattr(getattr(embeddings, "inner", None), "client", None)
    aio = getattr(client, "aio", None)
    if client is not None and aio is not None and hasattr(aio, "aclose"):
        client.close()
        await aio.aclose()


@contextmanager
def ace_client(
    env: Mapping[str, str] | None = None, options: Mapping[str, Any] | None = None
) -> Iterator[TestClient[Litestar]]:
    """An in-process client for `ace_app(env, options)`."""
    with TestClient(app=ace_app(env, options), raise_server_exceptions=False) as client:
        yield client
