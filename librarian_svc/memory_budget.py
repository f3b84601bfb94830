"""Admission by working memory: how many heavy requests one worker runs at once.

The request limits bound what one request may cost, not how many arrive together: a worker of a
1 GiB instance that ran 40 of the largest ACE requests at once (each holds about a hundred times its
body in embeddings and indexes) would be killed for memory, dropping every request in flight. So each
request's working memory is estimated from its body size and its operation's factor
(`AgentSpec.memory_per_body_byte`), and the worker runs heavy requests only while their estimates fit
`WORKER_MEMORY_BUDGET_MB`; the others wait in arrival order. The wait counts against the request's own
deadline, so one that cannot start in time answers ERROR TIMEOUT carrying its state, as any slow step does.

Requests whose estimate is under `EXEMPT_MB` (every usual Librarian or GRACE step) never wait: at the
instance's concurrency they fit in what the budget leaves, and a lock would only cost them time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

EXEMPT_MB = 1.0
"""Estimates below this run at once, outside the budget."""


class MemoryBudget:
    """A first-come, first-served weighted semaphore counted in megabytes, for one worker's event loop."""

    def __init__(self, capacity_mb: float) -> None:
        """`capacity_mb`: the working memory heavy requests may hold at once."""
        self.capacity_mb = capacity_mb
        self.in_use_mb = 0.0
        self._waiting: deque[tuple[float, asyncio.Future[None]]] = deque()

    async def run(self, need_mb: float, start: Callable[[], Awaitable[T]]) -> T:
        """Run `start()` once `need_mb` fits; a request larger than the whole budget runs alone."""
        if need_mb < EXEMPT_MB:
            return await start()
        need = min(need_mb, self.capacity_mb)
        await self._acquire(need)
        try:
            return await start()
        finally:
            self._release(need)

    async def _acquire(self, need: float) -> None:
        if not self._waiting and self.in_use_mb + need <= self.capacity_mb:
            self.in_use_mb += need
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (need, granted)
        self._waiting.append(entry)
        try:
            await granted
        except asyncio.CancelledError:  # the deadline passed while waiting
            if granted.done() and not granted.cancelled():
                self._release(need)  # granted in the same tick as the cancellation: give it back
            else:
                if entry in self._waiting:  # `_wake` drops entries whose future was cancelled
                    self._waiting.remove(entry)
                self._wake()  # a large request leaving the head of the queue may unblock smaller ones
            raise

    def _release(self, need: float) -> None:
        self.in_use_mb -= need
        self._wake()

    def _wake(self) -> None:
        """Grant waiting requests in arrival order while the head of the queue fits."""
        while self._waiting and self.in_use_mb + self._waiting[0][0] <= self.capacity_mb:
            need, granted = self._waiting.popleft()
            if not granted.done():
                self.in_use_mb += need
                granted.set_result(None)
