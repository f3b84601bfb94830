"""Check that a request's `search_history` is the continuation of the state it carries.

The server enforces `max_loops` from what it can verify: the state pins the limit and a hash
chain of the rounds it has seen, so a client cannot drop, edit or reorder rounds, replay a
state against another question or subject, or raise the limit by editing its request.
"""

from __future__ import annotations

import hashlib

import msgspec

from contracts.common import ErrorDetail
from contracts.librarian import DEFAULT_MAX_LOOPS, LibrarianRequest, LibrarianState, SearchRound
from graphs.errors import InvalidInput
from graphs.text.normalize import normalize

_encoder = msgspec.json.Encoder(order="sorted")
GENESIS = "0" * 64


def chain_digest(rounds: list[SearchRound], start: str = GENESIS) -> str:
    """Fold the rounds into one hash: each link covers the previous digest and the round's canonical JSON."""
    digest = start
    for round_ in rounds:
        digest = hashlib.sha256(digest.encode() + _encoder.encode(round_)).hexdigest()
    return digest


def query_digest(user_query: str, subject_id: str) -> str:
    """Binds a state to its question and subject."""
    return hashlib.sha256(f"{subject_id}\x00{normalize(user_query)}".encode()).hexdigest()


def loop_limit(request: LibrarianRequest, prior: LibrarianState | None) -> int:
    """The loop limit of this session: the first call's (or the default), then whatever the state pinned.

    Raises:
        InvalidInput: (422) a later call asks for a different `max_loops` than the state pinned; the
            limit never changes behind the caller's back, in either direction.
    """
    asked = request.constraints.max_loops
    if prior is None:
        return DEFAULT_MAX_LOOPS if isinstance(asked, msgspec.UnsetType) else asked
    if not isinstance(asked, msgspec.UnsetType) and asked != prior.max_loops:
        message = (
            f"max_loops is pinned to {prior.max_loops} by this session's first call; omit it or send {prior.max_loops}"
        )
        raise InvalidInput(message, [ErrorDetail(path="$.constraints.max_loops", message=message)], status_code=422)
    return prior.max_loops


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
