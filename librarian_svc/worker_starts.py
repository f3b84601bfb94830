"""Replacement workers started off the supervisor's loop, so that loop never waits on a fork server.

Forking a worker from a running fork server takes milliseconds. A fork server that died (the OOM
killer may pick it) is brought up again by the next worker start, which then waits while the new
fork server imports everything it preloads: 1.2 s on a quiet 2-core machine, and for ever if an
import hangs. The supervisor's loop used to do that waiting itself, relaying no SIGTERM and pinging
no worker meanwhile. Here each replacement's `start()` runs on a thread of its own, one start at a
time (the fork server forks one worker at a time anyway). The loop looks at it on each tick, and a
start that has not returned within `WORKER_START_ALLOWANCE_S` counts as a worker that cannot start.

The threads are daemons: a start that hangs must not keep the supervisor from exiting.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from uvicorn.supervisors.multiprocess import Process

from librarian_svc.worker_health import WORKER_START_ALLOWANCE_S
from librarian_svc.worker_process import start_unpolled


@dataclass
class _Start:
    """One worker's `start()`, running on its thread."""

    process: Process
    began_at: float
    """When it began (supervised clock time)."""
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    running: bool = False
    """It has its turn (the others wait for theirs)."""
    started: bool = False
    """The process was started (not skipped by a shutdown, and no error)."""
    abandoned: bool = False
    """It overran `WORKER_START_ALLOWANCE_S`: the instance stops without waiting for it."""


class WorkerStarts:
    """The replacement starts under way, by worker index."""

    def __init__(self) -> None:
        self._starts: dict[int, _Start] = {}
        self._one_at_a_time = threading.Lock()
        self._stopping = threading.Event()

    def __contains__(self, index: int) -> bool:
        return index in self._starts

    def begin(self, index: int, process: Process, now: float) -> None:
        """Start `process` (worker `index`'s successor) on a thread of its own.

        Raises RuntimeError when no thread can be started (out of memory, or of the cgroup's pids), as
        the fork would fail then.
        """
        start = _Start(process, now)
        self._starts[index] = start
        try:
            threading.Thread(target=self._run, args=(start,), name=f"worker-start-{index}", daemon=True).start()
        except RuntimeError:
            del self._starts[index]
            raise

    def settled(self, index: int, now: float) -> bool:
        """True once worker `index`'s start has returned; False while it runs.

        Raises what the start raised (out of descriptors or memory: the worker cannot be started), or
        TimeoutError once it has run for `WORKER_START_ALLOWANCE_S` (it is then abandoned: the shutdown
        does not wait for it).
        """
        start = self._starts[index]
        if not start.done.is_set():
            if now - start.began_at >= WORKER_START_ALLOWANCE_S:
                start.abandoned = True
                raise TimeoutError(f"a worker's start has not returned in {WORKER_START_ALLOWANCE_S:.0f} s")
            return False
        del self._starts[index]
        if start.error is not None:
            raise start.error
        return True

    def finish(self, deadline: float) -> list[Process]:
        """At shutdown: begin no start still waiting its turn; wait for the one under way until `deadline`.

        `deadline` is monotonic. The processes that started. The one under way is waited for because it may
        be pickling the listening sockets, which the supervisor closes next. (A start that returns after
        `deadline` leaves a worker that stops when the supervisor exits: its health pipe then closes.)
        """
        self._stopping.set()  # before reading `running`: a start either saw this, or is running and waited for
        for start in self._starts.values():
            if start.running and not start.abandoned:
                start.done.wait(max(0.0, deadline - time.monotonic()))
        started = [start.process for start in self._starts.values() if start.started]
        self._starts.clear()
        return started

    def _run(self, start: _Start) -> None:
        try:
            with self._one_at_a_time:
                start.running = True
                if self._stopping.is_set():  # its sockets are being closed: pickling them would fail
                    return
                start_unpolled(start.process)
                start.started = True
        except BaseException as exc:  # handed to the supervisor's loop, which stops the instance
            start.error = exc
        finally:
            start.done.set()
