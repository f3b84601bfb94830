"""Workers whose fork server died: the supervisor adopts them, tells them to drain, and reaps them.

The fork server forks the workers and reports their exit status (`worker_process`). When it is
killed (the kernel's OOM killer may pick it), every worker's status reads 255 and the supervisor
starts successors, but the old workers still run, orphaned. The kernel used to hand them to the
first process: in a container that is the supervisor itself, which never waited for them (a zombie
per worker per fork-server death, for the instance's life), and it could not signal them either
(multiprocessing no longer signals a process whose status it has). They stopped only when their
health pipe closed, logging that "the supervisor is gone", which it was not.

The supervisor now declares itself the reaper of its orphaned descendants (Linux's child subreaper,
so the same holds on a VM as in a container). A worker whose status was lost becomes its child, which
it can signal safely (a child's pid is not reused before its parent has waited for it): SIGTERM, so
the worker drains its requests as on any shutdown, then the supervisor reaps it and logs its status.
A worker that does not become its child within `ADOPTION_WINDOW_S` (it exited with status 255 itself,
and the fork server reaped it; or the platform has no subreaper) is only released: closing its health
pipe stops it if it still runs. Only workers are reaped so: waiting for any child would take their
status from multiprocessing, and the service starts no other process that could be orphaned.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from dataclasses import dataclass

import structlog
from uvicorn.supervisors.multiprocess import Process

from librarian_svc.worker_process import release

log = structlog.get_logger(__name__)

LOST_STATUS = 255
"""The status multiprocessing reports for a worker whose fork server died (it can no longer read the real one)."""
ADOPTION_WINDOW_S = 1.0
"""How long a worker whose status was lost may take to become the supervisor's child (the kernel reparents it as
the fork server exits, a moment after the supervisor can read the fork server's pipes closed)."""
POLL_S = 0.05
"""How often the shutdown looks for orphans that have exited."""
_PR_SET_CHILD_SUBREAPER = 36
"""prctl(2)'s option (linux/prctl.h)."""


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where it cannot.

    Not inherited by the processes it forks or spawns: the fork server and the workers stay plain processes.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    one, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)
    return bool(libc.prctl(ctypes.c_int(_PR_SET_CHILD_SUBREAPER), one, zero, zero, zero) == 0)


@dataclass
class Orphan:
    """A worker whose exit status was lost with its fork server."""

    process: Process
    pid: int
    lost_at: float
    """When its status was read as lost (monotonic)."""
    told: bool = False
    """It is the supervisor's child, and SIGTERM was sent: it drains."""


class OrphanedWorkers:
    """The workers whose status was lost, until each is reaped or known not to be the supervisor's child."""

    def __init__(self) -> None:
        self._orphans: list[Orphan] = []

    def __len__(self) -> int:
        return len(self._orphans)

    def adopt(self, process: Process) -> None:
        """Watch `process`, whose status read `LOST_STATUS`: it may still run, and become the supervisor's child."""
        assert process.pid is not None  # it was started: its status was read
        if all(orphan.pid != process.pid for orphan in self._orphans):
            self._orphans.append(Orphan(process, process.pid, time.monotonic()))

    def tend(self) -> None:
        """One look at each orphan: tell the running ones to drain, reap the exited, release those not ours."""
        now = time.monotonic()
        for orphan in list(self._orphans):
            if self._look_at(orphan, now - orphan.lost_at >= ADOPTION_WINDOW_S):
                self._orphans.remove(orphan)

    def stop(self, deadline: float) -> None:
        """At shutdown: tell every orphan to drain, and wait until `deadline` (monotonic) for each to exit.

        Then SIGKILL those still running. One not (yet) the supervisor's child is waited for only until the
        adoption window ends, then released.
        """
        self.tend()
        while self._orphans and time.monotonic() < deadline:
            time.sleep(POLL_S)
            self.tend()
        for orphan in self._orphans:
            if orphan.told:  # the supervisor's child: its pid cannot have been reused
                log.warning("an orphaned worker did not stop in time: killing it", pid=orphan.pid)
                with contextlib.suppress(ProcessLookupError, ChildProcessError):
                    os.kill(orphan.pid, signal.SIGKILL)
                    self._reaped(orphan, os.waitpid(orphan.pid, 0)[1])
                    continue
            release(orphan.process)
        self._orphans.clear()

    def _look_at(self, orphan: Orphan, window_over: bool) -> bool:
        """True once the supervisor is done with `orphan`: reaped, or released as not its child."""
        try:
            pid, status = os.waitpid(orphan.pid, os.WNOHANG)
        except ChildProcessError:  # not (yet) the supervisor's child
            if not window_over:
                return False
            release(orphan.process)  # if it still runs, the closed pipe tells it the supervisor is gone
            return True
        if pid == 0:
            if not orphan.told:
                log.warning("a worker outlived its fork server: draining it", pid=orphan.pid)
                os.kill(orphan.pid, signal.SIGTERM)
                orphan.told = True
            return False
        self._reaped(orphan, status)
        return True

    @staticmethod
    def _reaped(orphan: Orphan, status: int) -> None:
        log.info("an orphaned worker exited", pid=orphan.pid, exit_status=os.waitstatus_to_exitcode(status))
        release(orphan.process)
