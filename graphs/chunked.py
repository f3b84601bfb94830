"""CPU work in bounded chunks: one generator, run either on the event loop or on a worker thread.

A long CPU section written as a generator that `yield`s between chunks (and `return`s its result) can
be driven two ways without being written twice: `finish_async` awaits the request's checkpoint at
every yield (the deadline binds and the event loop answers `/health` and other requests in between),
`finish` calls a plain check there (tests, sync callers, work moved to a thread). The generator itself
never sees a clock or a loop, so it stays a pure function of its input.

Async loops whose items are uneven (sentences, snippets) pace themselves with a `Pacer` instead: it counts
the work done in units (characters, rows) and awaits the checkpoint each time another chunk's worth is done.
Both take the request's `Checkpoint` (`graphs.context`), so one deadline binds every kind of chunked work.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from graphs.context import Checkpoint

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


async def finish_async(work: Chunked[T], between: Checkpoint) -> T:
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


class Pacer:
    """Awaits `checkpoint` each time another `every` units of work (characters, rows) have been done.

    For async loops whose steps are uneven: a step reports its size with `tick`, and a long run of small
    steps or one large step both reach the checkpoint after about `every` units. Without a checkpoint
    (a caller outside a request) it only counts.
    """

    def __init__(self, checkpoint: Checkpoint | None, every: int) -> None:
        """Pace work against `checkpoint` (the request's `AgentContext.checkpoint`), every `every` units."""
        self.checkpoint = checkpoint
        self.every = every
        self.done = 0
        self.due = every

    async def tick(self, units: int = 1) -> None:
        """Count `units` of work just done; await the checkpoint once a chunk's worth has been done since the last."""
        self.done += units
        if self.done >= self.due and self.checkpoint is not None:
            self.due = self.done + self.every
            await self.checkpoint()
