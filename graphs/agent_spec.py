"""What an agent tells the HTTP layer about one of its operations, so one runner can serve them all.

Each agent's `run.py` declares an `AgentSpec` per endpoint: the request type (decoded strictly), the
state it carries between calls (if any), its one pre-graph `check` on caller input, and the `run`
function that advances the graph. The runner in `librarian_svc/request_runner.py` does the rest the
same way for every agent: request id, deadline, opening and checking the state token, sealing the
next one, and mapping failures to the ERROR body. Nothing here knows about HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import msgspec

from graphs.context import AgentContext

Req = TypeVar("Req", bound=msgspec.Struct)
St = TypeVar("St")
Body = Literal["json", "text", "none"]


@dataclass(frozen=True)
class StateSpec(Generic[St]):
    """The state an agent carries between calls: the token's agent name and version, and its type."""

    agent: str
    version: int
    state_type: type[St]


def no_check(request: Any, prior: Any, context: AgentContext) -> None:
    """For operations whose request type says all there is to check."""


def constraints_timeout(request: Any) -> int | None:
    """The request's own time budget: `constraints.timeout_ms`, the field every agent request has."""
    timeout_ms: int | None = request.constraints.timeout_ms
    return timeout_ms


def server_timeout(request: Any) -> int | None:
    """For operations whose request carries no budget of its own: the server's default applies."""
    return None


@dataclass(frozen=True, kw_only=True)
class AgentSpec(Generic[Req, St]):
    """One agent operation as the request runner sees it.

    Attributes:
        name: The operation's name in logs (`librarian`, `ace_generate`, ...).
        request_type: The body's Struct; decoded strictly (unknown fields and coercion refused).
        response_type: The 200 body's type (usually a union tagged by `action`), for the OpenAPI document.
        run: Advances the agent: `(graph, context, request, prior_state) -> response`. The context carries
            the request id, the deadline and, for stateful agents, `seal` for the next state's token.
        check: The one place the agent checks caller input the schema cannot express, before any graph
            runs; raises `InvalidInput`.
        graph: The compiled graph `run` gets (by name), or None for an operation without one.
        state: The state carried in the request's and response's `state` token, or None.
        stream: For operations that also stream: yields progress records (`progress_type`), then the response.
        progress_type: The type of the records `stream` yields before the response.
        timeout_ms: The request's own time budget, if it may set one.
        body: How the request arrives. `json`: a JSON body decoded strictly into `request_type`. `text`: a
            `text/plain` (UTF-8) body; `request_type` is built from the path and query parameters plus the
            body as its `text` field. `none`: no body; `request_type` from the parameters alone. A `run`
            that returns `str` answers `text/plain` (`response_type` is then `str`).
        server_error: What a 500 of this operation means (it reads or writes a stored file), for the
            OpenAPI document; None when it has no such failure.
        memory_per_body_byte: About how many bytes of working memory the operation holds per byte of its
            body, at its worst (`python -m bench.memory_admission`, per agent); the server admits heavy
            requests by this estimate, before reading their bodies (`librarian_svc/memory_budget.py`).
    """

    name: str
    request_type: type[Req]
    response_type: Any
    run: Callable[[Any, AgentContext, Req, St | None], Awaitable[Any]]
    check: Callable[[Req, St | None, AgentContext], None] = no_check
    graph: str | None = None
    state: StateSpec[St] | None = None
    stream: Callable[[Any, AgentContext, Req, St | None], AsyncIterator[Any]] | None = None
    progress_type: type[Any] | None = None
    timeout_ms: Callable[[Req], int | None] = constraints_timeout
    body: Body = "json"
    server_error: str | None = None
    memory_per_body_byte: int = 20
