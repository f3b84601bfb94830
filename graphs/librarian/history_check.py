"""Check that a request's `search_history` is the continuation of the state it carries.

The loop limit (loop_limit.py) counts rounds the server can verify: the state carries a hash chain
of the rounds it has seen, so a client cannot drop, edit or reorder rounds, or replay a state
against another question or subject.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from contracts.common import ErrorDetail
from contracts.librarian import LibrarianRequest, LibrarianState, SearchRound
from graphs.errors import InvalidInput
from graphs.text.normalize import normalize

_encoder = msgspec.json.Encoder(order="sorted")
GENESIS = "0" * 64


def chain_digest(rounds: list[SearchRound], start: str = GENESIS) -> str:
    """Fold the rounds into one hash: each link covers the previous digest and the round's canonical JSON."""
    digest = start
    for round_ in rounds:
        digest = hashlib.sha256(digest.encode() + _encoder.encode(_canonical(round_))).hexdigest()
    return digest


def _canonical(round_: SearchRound) -> SearchRound:
    """The round with every integral float in its hits' metadata as an integer (`1.0` as `1`).

    A client that keeps the history as decoded JSON sends back `{"rank": 1.0}` as `{"rank": 1}` (Go's
    `map[string]any`, JavaScript): the same value, so the same round, not an edited one. The typed fields
    are numbers of one type already; only the free-form metadata can hold either.
    """
    if not any(hit.metadata and _has_float(hit.metadata) for hit in round_.results):
        return round_
    results = [
        msgspec.structs.replace(hit, metadata=_integral(hit.metadata)) if hit.metadata else hit
        for hit in round_.results
    ]
    return msgspec.structs.replace(round_, results=results)


def _has_float(value: object) -> bool:
    if type(value) is float:
        return True
    if type(value) is dict:
        return any(_has_float(v) for v in value.values())
    if type(value) is list:
        return any(_has_float(v) for v in value)
    return False


def _integral(value: Any) -> Any:
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is dict:
        return {key: _integral(v) for key, v in value.items()}
    if type(value) is list:
        return [_integral(v) for v in value]
    return value


def query_digest(user_query: str, subject_id: str) -> str:
    """Binds a state to its question and subject."""
    return hashlib.sha256(f"{subject_id}\x00{normalize(user_query)}".encode()).hexdigest()


def verify_continuation(request: LibrarianRequest, prior: LibrarianState | None) -> None:
    """Raise `InvalidInput` unless the history is exactly the state's rounds plus one new round."""
    if prior is None:
        return
    if prior.subject_id != request.subject_id or prior.query_digest != query_digest(
        request.user_query, request.subject_id
    ):
        raise InvalidInput(
            "state was issued for another question or subject_id",
            [ErrorDetail(path="$.state", message="does not belong to this user_query/subject_id")],
        )
    history = request.search_history
    if len(history) != prior.rounds_seen + 1:
        raise InvalidInput(
            f"search_history has {len(history)} rounds; this state expects {prior.rounds_seen + 1} "
            f"(the {prior.rounds_seen} it has seen plus the results of the SEARCH it asked for)",
            [ErrorDetail(path="$.search_history", message=f"expected {prior.rounds_seen + 1} rounds")],
        )
    if chain_digest(history[: prior.rounds_seen]) != prior.history_digest:
        raise InvalidInput(
            "search_history does not match the rounds this state has seen (edited, dropped or reordered)",
            [ErrorDetail(path="$.search_history", message="earlier rounds changed since the state was issued")],
        )
