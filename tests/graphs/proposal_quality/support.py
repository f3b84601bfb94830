"""App fixtures for the proposal-quality tests that work before and after the routes are registered.

Until `ProposalQualityController` is in `librarian_svc.app.ROUTE_HANDLERS` (and the graph in
`GRAPH_BUILDERS`), the app is built with the controller as an extra route handler and the graph
builder patched in; afterwards the plain `make_app` / `client` / `live_service` fixtures are used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from graphs.proposal_quality.graph import build_graph
from librarian_svc.app import ROUTE_HANDLERS, create_app
from librarian_svc.controllers.proposal_quality import AGENT, ProposalQualityController
from librarian_svc.services import GRAPH_BUILDERS
from librarian_svc.settings import load_settings

AppFactory = Callable[..., Litestar]


def registered() -> bool:
    """Whether the shared app already serves the proposal-quality routes."""
    return ProposalQualityController in ROUTE_HANDLERS and GRAPH_BUILDERS.get(AGENT) is build_graph


def app_factory(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> AppFactory:
    """`make_app` once the routes are registered; until then, the same with the controller added."""
    if registered():
        factory: AppFactory = request.getfixturevalue("make_app")
        return factory
    monkeypatch.setitem(GRAPH_BUILDERS, AGENT, build_graph)

    def make(env: Mapping[str, str] | None = None) -> Litestar:
        settings = load_settings({**os.environ, **(env or {})})
        return create_app(settings, extra_route_handlers=[ProposalQualityController])

    return make


def client_for(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient[Litestar]]:
    """The session `client` once the routes are registered; until then, a client of an app with them."""
    if registered():
        yield request.getfixturevalue("client")
        return
    with TestClient(app=app_factory(request, monkeypatch)(), raise_server_exceptions=False) as client:
        yield client
