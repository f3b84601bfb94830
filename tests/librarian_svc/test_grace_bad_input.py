"""Bad input to `POST /agent/grace/step`: a clear 4xx INVALID_INPUT with the JSON path, and the state left usable."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.graphs.grace.helpers import STEP, STRONG_TOWER_HITS, TOWER_QUESTION, Walker, event_types, hit
from tests.support.state_tokens import TEST_STATE_KEY, edit_token

Body = dict[str, Any]


@pytest.fixture(name="client", scope="module")
def fixture_client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    """A client of the session app for the whole module (the module-scoped states below are made with it)."""
    with TestClient(app=app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(name="pending_search", scope="module")
def fixture_pending_search(client: TestClient[Litestar]) -> Body:
    """A first SEARCH of a two-search plan (its state is reused, never modified, by every test)."""
    return Walker(client).start("東京タワーとスカイツリーの高さの違いは？")


def good_answer(search: Body) -> Body:
    return {"request_id": "ok", "state": search["state"], "tool_result": {"step_id": search["step_id"], "hits": []}}


def refused(response: Any, status: int, path: str, words: str | None = None) -> Body:
    assert response.status_code == status, response.text
    body: Body = response.json()
    assert body["action"] == "ERROR"
    assert body["error_type"] == "INVALID_INPUT"
    assert path in [d["path"] for d in body["details"]], body
    if words is not None:
        assert words in body["message"], body["message"]
    return body


def with_state(search: Body, **fields: Any) -> Body:
    return {"request_id": "bad", "state": copy.deepcopy(search["state"]), **fields}


@pytest.mark.parametrize(
    ("make", "path", "words"),
    [
        pytest.param(lambda s: with_state(s), "$.tool_result", "is required", id="missing-tool-result"),
        pytest.param(
            lambda s: with_state(s, user_response={"decision": "PROCEED"}),
            "$.user_response",
            "nothing was asked",
            id="user-response-when-nothing-was-asked",
        ),
        pytest.param(
            lambda s: with_state(s, tool_result={"step_id": 99, "hits": []}),
            "$.tool_result.step_id",
            "not the pending SEARCH",
            id="tool-result-for-another-step",
        ),
        pytest.param(
            lambda s: with_state(s, tool_result={"step_id": s["step_id"], "hits": [], "turn": s["turn"] + 1}),
            "$.tool_result.turn",
            "waiting for the answer to turn 1",
            id="answer-to-another-turn",
        ),
        pytest.param(
            lambda s: with_state(s, tool_result={"step_id": s["step_id"], "hits": [hit("d", "x", 1.5)]}),
            "$.tool_result.hits[0].score",
            "out of range",
            id="score-above-one",
        ),
        pytest.param(
            lambda s: with_state(
                s, tool_result={"step_id": s["step_id"], "hits": [hit("d", "x", 0.5), hit("e", "y", -0.1)]}
            ),
            "$.tool_result.hits[1].score",
            "out of range",
            id="negative-score",
        ),
        pytest.param(
            lambda s: with_state(s, query="別の質問", tool_result={"step_id": s["step_id"], "hits": []}),
            "$.query",
            "another question",
            id="other-question",
        ),
        pytest.param(
            lambda s: with_state(s, collections=[{"name": "other"}], tool_result={"step_id": s["step_id"], "hits": []}),
            "$.collections",
            "first call",
            id="collections-changed",
        ),
        pytest.param(
            lambda s: with_state(
                s,
                plan_steps=[{"step_id": 1, "action": "reasoning"}],
                tool_result={"step_id": s["step_id"], "hits": []},
            ),
            "$.plan_steps",
            "first call",
            id="plan-on-a-later-call",
        ),
        pytest.param(
            lambda s: with_state(s, confirm_plan=True, tool_result={"step_id": s["step_id"], "hits": []}),
            "$.confirm_plan",
            "confirm_plan is accepted on the first call only",
            id="confirm-plan-on-a-later-call",
        ),
        pytest.param(
            lambda s: with_state(
                s,
                confirm_plan=True,
                plan_steps=[{"step_id": 1, "action": "reasoning"}],
                tool_result={"step_id": s["step_id"], "hits": []},
            ),
            "$.confirm_plan",
            "plan_steps is accepted on the first call only; confirm_plan",
            id="plan-and-confirm-plan-on-a-later-call",
        ),
    ],
)
def test_a_request_that_does_not_answer_the_pending_search_is_refused(
    client: TestClient[Litestar], pending_search: Body, make: Callable[[Body], Body], path: str, words: str
) -> None:
    refused(client.post(STEP, json=make(pending_search)), 400, path, words)
    # the state is untouched: the correct answer still goes through
    assert client.post(STEP, json=good_answer(pending_search)).status_code == 200


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"confirm_plan": False}, id="confirm-plan-false"),  # its default: the same as leaving it out
        pytest.param({"plan_steps": None}, id="plan-steps-null"),
        pytest.param({"collections": None}, id="collections-null"),
    ],
)
def test_a_first_call_field_at_its_default_passes_on_a_later_call(
    client: TestClient[Litestar], pending_search: Body, fields: Body
) -> None:
    response = client.post(STEP, json=good_answer(pending_search) | fields)
    assert response.status_code == 200, response.text


def test_a_replayed_older_state_is_refused(client: TestClient[Litestar]) -> None:
    walker = Walker(client)
    first = walker.start("東京タワーとスカイツリーの高さの違いは？")
    second = walker.search(STRONG_TOWER_HITS)
    assert second["action"] == "SEARCH"
    assert second["step_id"] != first["step_id"]
    # the first state answered with the second step's results (an old state replayed with new results)
    replay = {"request_id": "r", "state": first["state"], "tool_result": {"step_id": second["step_id"], "hits": []}}
    refused(client.post(STEP, json=replay), 400, "$.tool_result.step_id", "another step")
    # the new state answered with the first step's results again
    stale = {"request_id": "r", "state": second["state"], "tool_result": {"step_id": first["step_id"], "hits": []}}
    refused(client.post(STEP, json=stale), 400, "$.tool_result.step_id")


def test_an_answer_bound_to_another_question_is_refused(client: TestClient[Litestar]) -> None:
    walker = Walker(client)
    walker.start()
    first_question = walker.search(error="down")  # asks the user (fallback of the failed search)
    assert first_question["action"] == "ASK_USER"
    assert first_question["turn"] == 2
    # the answer to the question of turn 2, sent with a state whose question is another one
    plan_question = Walker(client).start(confirm_plan=True)
    assert plan_question["turn"] == 1
    mixed = {
        "request_id": "r",
        "state": plan_question["state"],
        "user_response": {"decision": "PROCEED", "turn": first_question["turn"]},
    }
    refused(client.post(STEP, json=mixed), 400, "$.user_response.turn", "replayed or mixed-up")


def test_a_state_that_asked_the_user_takes_no_tool_result(client: TestClient[Litestar]) -> None:
    walker = Walker(client)
    walker.start()
    ask = walker.search(error="down")  # one collection: falls back to asking the user
    assert ask["action"] == "ASK_USER"
    bad = {"request_id": "r", "state": ask["state"], "tool_result": {"step_id": ask["step"]["step_id"], "hits": []}}
    refused(client.post(STEP, json=bad), 400, "$.tool_result", "ASK_USER")
    missing = {"request_id": "r", "state": ask["state"]}
    refused(client.post(STEP, json=missing), 400, "$.user_response", "required")
    wrong_step = {"request_id": "r", "state": ask["state"], "user_response": {"decision": "CANCEL", "step_id": 1}}
    refused(client.post(STEP, json=wrong_step), 400, "$.user_response.step_id")


@pytest.mark.parametrize(
    ("body", "status", "path"),
    [
        pytest.param({}, 400, "$.query", id="no-query"),
        pytest.param({"query": "   "}, 400, "$.query", id="blank-query"),
        pytest.param({"query": "q", "tool_result": {"step_id": 1, "hits": []}}, 400, "$.tool_result", id="tool-result"),
        pytest.param({"query": "q", "user_response": {"decision": "PROCEED"}}, 400, "$.user_response", id="user-resp"),
        pytest.param(
            {"query": "q", "collections": [{"name": "a"}, {"name": "a"}]}, 400, "$.collections[1].name", id="dup"
        ),
        pytest.param({"query": "q", "collections": []}, 422, "$.collections", id="no-collection"),
        pytest.param(
            {"query": "q", "user_response": {"decision": "MAYBE"}}, 422, "$.user_response.decision", id="decision"
        ),
        pytest.param({"query": "q" * 8001}, 422, "$.query", id="query-too-long"),
        pytest.param({"query": "q", "constraints": {"timeout_ms": 5}}, 422, "$.constraints.timeout_ms", id="timeout"),
    ],
)
def test_bad_first_calls(client: TestClient[Litestar], body: Body, status: int, path: str) -> None:
    refused(client.post(STEP, json={"request_id": "r", **body}), status, path)


INVISIBLE = ["\u200b", " \u3000\t", "\ufeff\u200b\u2060", "\x00"]
"""Texts with no visible character: whitespace of any width, format characters (zero-width space, BOM), a control."""


@pytest.mark.parametrize("blank", INVISIBLE)
@pytest.mark.parametrize(
    ("step", "path", "words"),
    [
        pytest.param({"action": "rag_search", "collection": "documents"}, "query", "needs a query", id="search"),
        pytest.param({"action": "ask_user", "description": ""}, "description", "needs the question", id="question"),
    ],
)
def test_a_caller_step_with_only_invisible_text_is_refused(
    client: TestClient[Litestar], blank: str, step: Body, path: str, words: str
) -> None:
    """`"query": "\u200b"` was taken for a query (200 SEARCH for nothing visible): blank is blank everywhere."""
    plan = [{"step_id": 1, "query": blank, **step}]
    body = {"request_id": "r", "query": TOWER_QUESTION, "plan_steps": plan}
    refused(client.post(STEP, json=body), 400, f"$.plan_steps[0].{path}", words)


def test_hits_with_only_invisible_text_are_not_evidence(client: TestClient[Litestar]) -> None:
    """A snippet of zero-width spaces has nothing to quote: it is dropped like an empty one, so nothing was found."""
    walker = Walker(client)
    walker.start()
    hits = [{"document_id": f"d{i}", "snippet": text, "score": 0.9} for i, text in enumerate(INVISIBLE)]
    answer = walker.search(hits)
    assert answer["action"] == "SEARCH", answer  # no hits kept: the search is retried (LOW_CONFIDENCE)
    assert "replanned" in event_types(answer)


def test_collections_null_is_the_configured_default(client: TestClient[Litestar]) -> None:
    search = Walker(client).start(collections=None)
    assert search["action"] == "SEARCH"
    assert search["collection"] == "documents"


def _steps(*steps: Body) -> list[Body]:
    return list(steps)


SEARCH = {"action": "rag_search", "query": "東京タワー", "collection": "documents"}


@pytest.mark.parametrize(
    ("plan", "status", "path", "words"),
    [
        pytest.param(
            [{"step_id": 1, "action": "web_search", "query": "x"}],
            422,
            "$.plan_steps[0].action",
            None,
            id="unknown-action",
        ),
        pytest.param(
            [{"step_id": i, **SEARCH} for i in range(1, 34)], 422, "$.plan_steps", None, id="over-the-contract-cap"
        ),
        pytest.param(
            [{"step_id": i, **SEARCH} for i in range(1, 10)],
            400,
            "$.plan_steps",
            "at most 8 steps",
            id="over-max-steps",
        ),
        pytest.param(
            [{"step_id": 1, **SEARCH, "depends_on": [2]}, {"step_id": 2, **SEARCH, "depends_on": [1]}],
            400,
            "$.plan_steps",
            "cycle",
            id="cycle",
        ),
        pytest.param(
            [{"step_id": 1, **SEARCH}, {"step_id": 2, "action": "reasoning", "depends_on": [7]}],
            400,
            "$.plan_steps[1].depends_on[0]",
            "does not exist",
            id="dangling",
        ),
        pytest.param(
            [{"step_id": 1, **SEARCH}, {"step_id": 1, "action": "reasoning"}],
            400,
            "$.plan_steps[1].step_id",
            "duplicate",
            id="duplicate-id",
        ),
        pytest.param(
            [{"step_id": 1, "action": "rag_search", "query": "x", "collection": "nowhere"}],
            400,
            "$.plan_steps[0].collection",
            "unknown collection",
            id="unknown-collection",
        ),
        pytest.param(
            [{"step_id": 1, **SEARCH}, {"step_id": 2, "action": "reasoning", "depends_on": [1], "collection": "nope"}],
            400,
            "$.plan_steps[1].collection",
            "unknown collection",
            id="unknown-collection-on-a-reasoning-step",
        ),
        pytest.param(
            [{"step_id": 1, "action": "rag_search", "query": ""}],
            400,
            "$.plan_steps[0].query",
            "needs a query",
            id="no-q",
        ),
        pytest.param([{"step_id": 0, **SEARCH}], 422, "$.plan_steps[0].step_id", None, id="step-id-zero"),
    ],
)
def test_bad_caller_plans(
    client: TestClient[Litestar], plan: list[Body], status: int, path: str, words: str | None
) -> None:
    body = {"request_id": "r", "query": TOWER_QUESTION, "plan_steps": plan}
    refused(client.post(STEP, json=body), status, path, words)


def test_hits_over_the_limit_are_422(client: TestClient[Litestar], pending_search: Body) -> None:
    hits = [hit(f"d{i}", "x", 0.5) for i in range(201)]
    body = with_state(pending_search, tool_result={"step_id": pending_search["step_id"], "hits": hits})
    refused(client.post(STEP, json=body), 422, "$.tool_result.hits")


def _edit(search: Body, edit: Callable[[Body], None], key: str = TEST_STATE_KEY) -> Body:
    """The good answer with its state token edited and re-signed with `key` (the service's, by default)."""
    body = good_answer(search)
    body["state"] = edit_token(body["state"], edit, key=key)
    return body


def _huge_plan(state: Body) -> None:
    state["data"]["plan"]["steps"] = [{"step_id": i, "action": "reasoning"} for i in range(1, 41)]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        pytest.param(lambda s: s.update(schema_version=2), "schema version", id="version"),
        pytest.param(lambda s: s.update(agent="librarian"), "agent", id="agent"),
        pytest.param(
            lambda s: s["data"].update(replans=[]) or s["data"]["plan"].update(revision=1), "replan", id="replans"
        ),
        pytest.param(lambda s: s["data"]["thresholds"].update(silent=0.5), "thresholds", id="thresholds-out-of-order"),
        pytest.param(lambda s: s["data"]["thresholds"].update(confirm=0.01), "within", id="thresholds-out-of-bounds"),
        pytest.param(lambda s: s["data"]["pending"].update(step_id=3), "pending", id="pending-moved-to-reasoning"),
        pytest.param(lambda s: s["data"]["pending"].update(turn=7), "pending", id="turn"),
        pytest.param(lambda s: s["data"].update(pending=None), "pending", id="nothing-pending"),
        pytest.param(lambda s: s["data"].update(max_step_id=1), "step ids", id="ids-beyond-issued"),
        pytest.param(
            lambda s: s["data"]["plan"]["steps"][0].update(action="web_search"), "state schema", id="unknown-action"
        ),
        pytest.param(_huge_plan, "state schema", id="huge-plan"),
        pytest.param(lambda s: s["data"].update(done=True), "finished", id="finished"),
    ],
)
def test_an_edited_state_is_refused(
    client: TestClient[Litestar], pending_search: Body, edit: Callable[[Body], None], words: str
) -> None:
    response = client.post(STEP, json=_edit(pending_search, edit))
    assert response.status_code == 400, response.text
    assert response.json()["error_type"] == "INVALID_INPUT"
    assert words in response.json()["message"]
    assert client.post(STEP, json=good_answer(pending_search)).status_code == 200


@pytest.mark.parametrize("keys", [pytest.param("", id="no-key-configured"), pytest.param("k" * 32, id="own-key")])
def test_an_edited_token_is_refused_without_the_key(make_app: Callable[..., Litestar], keys: str) -> None:
    with TestClient(app=make_app({"STATE_SIGNING_KEYS": keys}), raise_server_exceptions=False) as client:
        search = Walker(client).start()
        for edit in (
            lambda s: s["data"].update(replans=[]) or s["data"]["plan"].update(revision=0),
            lambda s: s["data"]["thresholds"].update(confirm=0.39),
        ):
            edited = _edit(search, edit, key="attacker-key-0123456789")
            refused(client.post(STEP, json=edited), 400, "$.state", "signature does not match")
        truncated = {**good_answer(search), "state": search["state"][:-2]}
        refused(client.post(STEP, json=truncated), 400, "$.state")
        assert client.post(STEP, json=good_answer(search)).status_code == 200


@pytest.mark.parametrize(
    ("content", "status"),
    [pytest.param(b'{"request_id": "r", "query": ', 400, id="malformed"), pytest.param(b"", 400, id="empty")],
)
def test_unreadable_bodies(client: TestClient[Litestar], content: bytes, status: int) -> None:
    response = client.post(STEP, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == status
    assert response.json()["error_type"] == "INVALID_INPUT"
