"""Routing (pure functions), the loop limit and the history continuation check its count relies on."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from contracts.librarian import LibrarianState, SearchRound
from graphs.context import AgentContext
from graphs.errors import InvalidInput
from graphs.librarian import nodes
from graphs.librarian.assessment import Assessment
from graphs.librarian.graph import build_graph
from graphs.librarian.history_check import chain_digest, query_digest, verify_continuation
from graphs.librarian.loop_limit import no_evidence_error, pinned_loop_limit
from graphs.librarian.routing import choose_action
from graphs.librarian.run import think
from graphs.librarian.state import LibrarianGraphState
from tests.graphs.librarian.helpers import hit, request, round_of
from tests.support.context import make_context


def _assessment(*, sufficient: bool, usable: bool) -> Assessment:
    from graphs.librarian.assessment import ScoredCandidate
    from graphs.librarian.candidates import Candidate

    ranked = []
    if usable:
        candidate = Candidate(cid="c1", document_id="d", page=None, chunk_id=None, snippet="s", best_score=1.0)
        ranked = [ScoredCandidate(candidate, 1.0, 0.9, 0.9, frozenset(), frozenset())]
    return Assessment(ranked=ranked, sufficient=sufficient, missing=[], covered_terms=[], token_weights={})


@pytest.mark.parametrize(
    ("rounds", "max_loops", "sufficient", "usable", "expected"),
    [
        (0, 3, False, False, "plan_queries"),
        (1, 3, True, True, "select_evidence"),
        (1, 3, False, True, "plan_queries"),
        (3, 3, False, True, "select_evidence"),
        (3, 3, False, False, "fail"),
        (5, 3, False, False, "fail"),
        (1, 1, False, True, "select_evidence"),
    ],
)
def test_choose_action(rounds: int, max_loops: int, sufficient: bool, usable: bool, expected: str) -> None:
    state: LibrarianGraphState = {
        "request": request(search_history=[msgspec.to_builtins(round_of(hit("d", "x")))] * rounds),
        "loop_limit": max_loops,
        "assessment": _assessment(sufficient=sufficient, usable=usable),
    }
    assert choose_action(state) == expected


def _state_after(history: list[SearchRound], **overrides: object) -> LibrarianState:
    req = request()
    state = LibrarianState(
        rounds_seen=len(history),
        max_loops=3,
        history_digest=chain_digest(history),
        query_digest=query_digest(req.user_query, req.subject_id),
        subject_id=req.subject_id,
    )
    return msgspec.structs.replace(state, **overrides)


ROUNDS = [round_of(hit("a", "一"), queries=["x"]), round_of(hit("b", "二"), queries=["y"])]


def test_continuation_with_one_new_round_is_accepted() -> None:
    prior = _state_after(ROUNDS[:1])
    verify_continuation(request(search_history=[msgspec.to_builtins(r) for r in ROUNDS]), prior)


@pytest.mark.parametrize(
    ("history", "overrides", "message"),
    [
        pytest.param(ROUNDS[:1], {}, "expects 2", id="no-new-round"),
        pytest.param([*ROUNDS, ROUNDS[0]], {}, "expects 2", id="two-new-rounds"),
        pytest.param([ROUNDS[1], ROUNDS[1]], {}, "does not match", id="edited-round"),
        pytest.param(ROUNDS, {"subject_id": "other"}, "another question", id="other-subject"),
        pytest.param(ROUNDS, {"query_digest": "0" * 64}, "another question", id="other-question"),
    ],
)
def test_broken_continuations_are_invalid_input(
    history: list[SearchRound], overrides: dict[str, str], message: str
) -> None:
    prior = _state_after(ROUNDS[:1], **overrides)
    with pytest.raises(InvalidInput, match=message):
        verify_continuation(request(search_history=[msgspec.to_builtins(r) for r in history]), prior)


def test_digest_survives_reserialisation_but_not_edits() -> None:
    again = msgspec.json.decode(msgspec.json.encode(ROUNDS), type=list[SearchRound])
    assert chain_digest(again) == chain_digest(ROUNDS)
    assert chain_digest(list(reversed(ROUNDS))) != chain_digest(ROUNDS)


def _round_with_metadata(metadata: dict[str, Any]) -> SearchRound:
    text = '{"queries_text": ["x"], "results": [{"document_id": "a", "snippet": "一", "metadata": %s}]}'
    return msgspec.json.decode(text % msgspec.json.encode(metadata).decode(), type=SearchRound)


@pytest.mark.parametrize(
    ("sent", "sent_back"),
    [
        ('{"rank": 1.0}', '{"rank": 1}'),
        ('{"rank": 1}', '{"rank": 1.0}'),
        ('{"ranks": [1.0, {"at": 2.0}]}', '{"ranks": [1, {"at": 2}]}'),
        ('{"rank": 1e2}', '{"rank": 100}'),
    ],
)
def test_a_number_written_another_way_in_metadata_is_the_same_round(sent: str, sent_back: str) -> None:
    """A Go `map[string]any` or a JavaScript client writes 1.0 back as 1: the same value, not an edit."""
    first = _round_with_metadata(msgspec.json.decode(sent))
    again = _round_with_metadata(msgspec.json.decode(sent_back))
    assert chain_digest([first]) == chain_digest([again])


@pytest.mark.parametrize(("sent", "sent_back"), [('{"rank": 1.5}', '{"rank": 1}'), ('{"rank": 1}', '{"rank": "1"}')])
def test_a_different_value_in_metadata_is_still_an_edit(sent: str, sent_back: str) -> None:
    first = _round_with_metadata(msgspec.json.decode(sent))
    again = _round_with_metadata(msgspec.json.decode(sent_back))
    assert chain_digest([first]) != chain_digest([again])


@pytest.mark.parametrize(
    ("asked", "pinned", "expected"),
    [(None, None, 3), (6, None, 6), (None, 6, 6), (6, 6, 6), (None, 3, 3)],
)
def test_the_loop_limit_is_the_first_calls_and_then_the_pinned_one(
    asked: int | None, pinned: int | None, expected: int
) -> None:
    prior = None if pinned is None else _state_after([], max_loops=pinned)
    constraints = {} if asked is None else {"max_loops": asked}
    assert pinned_loop_limit(request(constraints=constraints), prior) == expected


@pytest.mark.parametrize(("asked", "pinned"), [(10, 3), (2, 3), (3, 6)])
def test_a_different_max_loops_after_the_first_call_is_422_naming_the_pinned_value(asked: int, pinned: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        pinned_loop_limit(request(constraints={"max_loops": asked}), _state_after([], max_loops=pinned))
    assert caught.value.status_code == 422
    assert caught.value.details[0].path == "$.constraints.max_loops"
    assert f"pinned to {pinned}" in caught.value.message


@pytest.mark.parametrize(
    ("rounds", "limit", "error_type"), [(3, 3, "LOOP_LIMIT"), (4, 3, "LOOP_LIMIT"), (1, 3, "OTHER"), (0, 1, "OTHER")]
)
def test_ending_without_evidence_is_loop_limit_only_when_the_limit_is_reached(
    rounds: int, limit: int, error_type: str
) -> None:
    found_type, message = no_evidence_error(rounds, limit)
    assert found_type == error_type
    assert f"after {rounds} search rounds" in message


@pytest.mark.parametrize(
    ("history", "action"),
    [
        ([round_of(hit("tower", "東京タワーは港区にある電波塔で、展望台がある。"))], "COMPLETE"),
        ([], "ERROR"),
    ],
    ids=["something-usable", "nothing-usable"],
)
def test_a_search_with_no_fresh_query_left_finishes_with_what_there_is(
    monkeypatch: pytest.MonkeyPatch, history: list[SearchRound], action: str
) -> None:
    """When every query the step could write was already issued, the step completes or fails: never an empty SEARCH."""
    asked: list[int] = []

    def nothing_fresh(state: LibrarianGraphState, context: AgentContext) -> None:
        asked.append(len(state["request"].search_history))

    monkeypatch.setattr(nodes, "plan_queries", nothing_fresh)
    step = request(search_history=[msgspec.to_builtins(r) for r in history])
    context = make_context().for_request(timeout_s=30, request_id="r", seal_state=lambda state: "token")
    answer = asyncio.run(think(build_graph(), context, step, None))
    assert asked == [len(history)]  # the step did want to search again
    assert msgspec.to_builtins(answer)["action"] == action
