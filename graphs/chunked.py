"""CPU work in bounded chunks: one generator, run either on the event loop or on a worker thread.

A long CPU section written as a generator that `yield`s between chunks (and `return`s its result) can
be driven two ways without being written twice: `finish_async` awaits the request's checkpoint at
every yield (the deadline binds and the event loop answers `/health` and other requests in between),
`finish` calls a plain check there (tests, sync callers, work moved to a thread). The generator itself
never sees a clock or a loop, so it stays a pure function of its input.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

T = TypeVar("T")

Chunked = Generator[None, None, T]
"""Work that yields between bounded chunks and returns its result."""


def finish(work: Chunked[T], between: Callable[[], None] | None = None) -> T:
    """Run chunked work to the end on this thread, calling `between` (e.g. `check_deadline`) at each pause."""
    try:
        while True:
            next(work)
            if between is not None:
                between()
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        work.close()


async def finish_async(work: Chunked[T], between: Callable[[], Awaitable[None]]) -> T:
    """Run chunked work on the event loop, awaiting `between` (the context's `checkpoint`) at each pause."""
    try:
        while True:
            next(work)
            await between()
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        work.close()
