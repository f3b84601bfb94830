"""Hostile input to GRACE: schemathesis over its OpenAPI operations, and edited states that still fit the schema.

Property: nothing a client sends gets a 5xx; every 4xx is the structured INVALID_INPUT body.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from schemathesis.generation import GenerationMode

from librarian_svc.app import create_app
from librarian_svc.settings import load_settings
from tests.graphs.grace.helpers import (
    MIDDLING_TOWER_HITS,
    STEP,
    STRONG_TOWER_HITS,
    Walker,
)
from tests.support.state_tokens import Envelope, edit_token, read_token

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))


# Built at import, as schemathesis wants (before any fixture exists).
_SCHEMA = schemathesis.openapi.from_asgi("/schema/openapi.json", create_app(load_settings()))
_SCHEMA.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
schema = _SCHEMA.include(path_regex="^/agent/grace/")


def _assert_contract(status: int, body: Any, text: str) -> None:
    assert status < 500, f"{status}: {text[:500]}"
    if status >= 400:
        assert body["action"] == "ERROR", body
        assert body["error_type"] == "INVALID_INPUT", body
        assert isinstance(body["details"], list), body


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_5xx_and_structured_4xx(case: schemathesis.Case[Any]) -> None:
    response = case.call()
    body = response.json() if response.status_code >= 400 else None  # 200 from /step/stream is an event stream
    _assert_contract(response.status_code, body, response.text)


@pytest.fixture(name="client", scope="module")
def fixture_client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    """A client of the session app for the whole module (the module-scoped states below are made with it)."""
    with TestClient(app=app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(name="states", scope="module")
def fixture_states(client: TestClient[Litestar]) -> list[dict[str, Any]]:
    """Requests that answer real states at several points of a session (SEARCH, CONFIRM, PLAN pending)."""
    walker = Walker(client)
    search = walker.start("東京タワーとスカイツリーの高さの違いは？")
    tool_answer = {"state": search["state"], "tool_result": {"step_id": search["step_id"], "hits": STRONG_TOWER_HITS}}
    walker.search(STRONG_TOWER_HITS)
    confirm = walker.search(MIDDLING_TOWER_HITS)
    assert confirm["action"] == "ASK_USER"
    plan = Walker(client).start(confirm_plan=True)
    return [
        tool_answer,
        {"state": confirm["state"], "user_response": {"decision": "PROCEED"}},
        {"state": confirm["state"], "user_response": {"decision": "MODIFY", "input": "x"}},
        {"state": plan["state"], "user_response": {"decision": "PROCEED"}},
    ]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


@settings(
    max_examples=int(os.environ.get("FUZZ_STATE_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), value=json_values)
def test_an_edited_state_never_breaks_the_service(
    client: TestClient[Litestar], states: list[dict[str, Any]], data: st.DataObject, value: Any
) -> None:
    body = copy.deepcopy(data.draw(st.sampled_from(states)))
    paths = [p for p in _paths(read_token(body["state"])["data"]) if p]
    path = data.draw(st.sampled_from(paths))

    def edit(envelope: Envelope) -> None:  # as an attacker holding the key: the cross-checks must hold
        target = envelope["data"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    body["state"] = edit_token(body["state"], edit)
    response = client.post(STEP, json={"request_id": "fuzz", **body})
    _assert_contract(response.status_code, response.json(), response.text)
