"""Run a short synchronous graph function on the event loop instead of LangGraph's thread pool.

LangGraph runs every sync node and every sync conditional-edge function of an async graph through
`run_in_executor`: one thread hop each, plus a GIL hand-off back to the event loop, which under load
costs more than the routing decision or the sub-millisecond node it carries. Routing functions stay
plain sync functions (tests call them directly); the graph registers them through `on_loop`.

Only for bounded work: anything that may run long belongs in an `async def` node that checks the
deadline between chunks (`AgentContext.checkpoint`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def on_loop(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`fn` as a coroutine function LangGraph awaits in place.

    `functools.wraps` keeps the signature and annotations visible, so LangGraph still injects
    `runtime` / `config` by parameter name and reads a router's `Literal[...]` return type for the
    edges it may take.
    """

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return fn(*args, **kwargs)

    return run
