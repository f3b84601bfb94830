"""When the supervisor replaces a worker: it stopped answering, or it never started serving.

A worker answers health pings from its event loop once it serves (`worker_process`), and from a
thread while it starts. So two things can go wrong with a live process: a serving worker's loop stops
running (it no longer answers), or a starting worker answers "not yet" for ever (an import or a
connection at start-up that hangs). Either way the kernel goes on giving that worker's socket its
share of new connections, and they wait. Both are judged here, on a clock of the supervisor's own.

The clock counts the time the supervisor itself runs. Cloud Run throttles an instance's CPU between
requests, and every process of the instance is starved alike: the supervisor then ticks late, and a
worker that could not answer during that time is not hung. Each tick therefore advances the clock by
at most `TICK_CREDIT_S`, so silence is only held against a worker while the supervisor itself runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

TICK_CREDIT_S = 1.0
"""The most one supervisor tick counts (it ticks every 0.1 s when it gets the CPU)."""

WORKER_START_ALLOWANCE_S = 60.0
"""How long a new worker may take to serve: its interpreter starts, it imports and builds the app.

About 1.5 s on a quiet machine (`bench.workers`), several times that on a loaded one; a worker not
serving by then is replaced.
"""


class SupervisedClock:
    """Seconds of the supervisor's own running: wall time, less what it spent starved of the CPU."""

    def __init__(self, wall: Callable[[], float] = time.monotonic) -> None:
        self._wall = wall
        self._last = wall()
        self._now = 0.0

    def tick(self) -> float:
        """The time now, advanced since the last tick by the wall time passed, up to `TICK_CREDIT_S`."""
        wall = self._wall()
        self._now += min(max(wall - self._last, 0.0), TICK_CREDIT_S)
        self._last = wall
        return self._now


@dataclass
class WorkerHealth:
    """What the supervisor knows of one worker's liveness, in `SupervisedClock` time."""

    serving_by: float
    """When it must be serving (its start plus `WORKER_START_ALLOWANCE_S`)."""
    answered_at: float
    """When it last answered a ping (for a new worker: `serving_by`, as its first answer waits for its interpreter)."""
    pinged: bool = False
    """A ping is outstanding."""
    serving: bool = False
    """Its last answer said it serves."""

    @classmethod
    def starting(cls, now: float) -> WorkerHealth:
        """A worker seen for the first time (just started): it has `WORKER_START_ALLOWANCE_S` to answer and serve."""
        deadline = now + WORKER_START_ALLOWANCE_S
        return cls(serving_by=deadline, answered_at=deadline)

    def answered(self, now: float, serving: bool) -> None:
        """It answered a ping (`serving`: the worker said it has started serving)."""
        self.answered_at, self.serving, self.pinged = now, serving, False

    def failure(self, now: float, hung_after_s: float) -> str | None:
        """Why the worker must be replaced, or None while it is healthy."""
        if now - self.answered_at >= hung_after_s:
            return "a worker stopped answering: replacing it"
        if not self.serving and now >= self.serving_by:
            return "a worker did not start serving in time: replacing it"
        return None
