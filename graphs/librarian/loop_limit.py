"""The Librarian's loop limit, in one place: which limit a session has, whether it is reached, how that is reported.

A session may run at most `max_loops` SEARCH rounds. The first call fixes the limit (its
`constraints.max_loops`, or the default) and the signed state pins it, so a client can neither raise
it later by editing its request nor reset the count: history_check.py verifies that the rounds
counted here are the ones the state has seen. The runner's `check` and `nodes.validate` read the
limit with `pinned_loop_limit`; routing asks `loop_limit_reached`; the `fail` node reports with
`no_evidence_error`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from contracts.common import ErrorDetail
from contracts.librarian import DEFAULT_MAX_LOOPS, LibrarianRequest, LibrarianState
from graphs.errors import InvalidInput


def pinned_loop_limit(request: LibrarianRequest, prior: LibrarianState | None) -> int:
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


def loop_limit_reached(rounds: int, limit: int) -> bool:
    """Whether `rounds` SEARCH rounds use up the limit: no further SEARCH may be asked for."""
    return rounds >= limit


def rounds_left(rounds: int, limit: int) -> int:
    """How many more SEARCH rounds the limit allows (what the model is told it has left)."""
    return max(0, limit - rounds)


def no_evidence_error(rounds: int, limit: int) -> tuple[Literal["LOOP_LIMIT", "OTHER"], str]:
    """The error type and message when a session ends with nothing usable.

    LOOP_LIMIT when the limit was reached; OTHER when rounds were left but no fresh query was.
    """
    if loop_limit_reached(rounds, limit):
        return "LOOP_LIMIT", f"no usable evidence after {rounds} search rounds (max_loops={limit})"
    return "OTHER", f"no usable evidence after {rounds} search rounds and no new query left to try"
