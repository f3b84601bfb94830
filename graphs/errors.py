"""Exceptions an agent raises for outcomes the HTTP layer maps to the ERROR body.

They live here (not in the HTTP package) because agents detect these conditions and agents
never import Litestar; `librarian_svc.errors` maps each to a status code and `error_type`.
"""

from __future__ import annotations

from contracts.common import ErrorDetail


class InvalidInput(Exception):
    """The client sent something the contract does not allow; mapped to a 4xx INVALID_INPUT."""

    def __init__(self, message: str, details: list[ErrorDetail] | None = None, *, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        self.status_code = status_code


MAX_DETAILS = 20
"""Problems listed in one error body; the message says how many there were in all."""


def raise_if_problems(
    problems: list[ErrorDetail], what: str, *, status_code: int = 400, total: int | None = None
) -> None:
    """Raise `InvalidInput` naming the first problems, when there are any.

    Args:
        problems: The problems found (a caller may stop building them after `MAX_DETAILS`).
        what: What is wrong, in a few words.
        status_code: The HTTP status.
        total: How many problems there are, when more were found than built (default: `len(problems)`).

    Raises:
        InvalidInput: `<what>: <n> problem(s): <the first three>`, the first `MAX_DETAILS` as details.
    """
    if problems:
        count = max(total or 0, len(problems))
        shown = problems[:MAX_DETAILS]
        more = f" (and {count - len(shown)} more)" if count > len(shown) else ""
        summary = "; ".join(f"{d.path}: {d.message}" for d in shown[:3])
        raise InvalidInput(f"{what}: {count} problem(s){more}: {summary}", shown, status_code=status_code)


class DeadlineExceeded(TimeoutError):
    """The request's budget ran out inside CPU work (raised by `AgentContext.check_deadline`).

    A subclass of TimeoutError so the request runner answers it exactly like an expired
    `asyncio.timeout`: ERROR TIMEOUT carrying the request's own state. It exists because a timeout
    on the event loop cannot interrupt code that never awaits, nor work running on a worker thread:
    such code calls `check_deadline()` between bounded chunks, so the work itself stops.
    """
