"""Whether every worker of the instance serves: what `/ready` waits for when there are several.

A load balancer (Cloud Run, once its startup probe passes) opens its keep-alive connections as soon as
`/ready` answers 200, and a connection stays with the worker that accepted it for its whole life. Were
the instance ready when its first worker is, those early connections would all land on that worker
and the instance would serve on one core while it pays for several (`python -m
bench.librarian_concurrency --workers 2` measured exactly that). So once every worker has answered its
health ping as serving, the supervisor sends each worker `EVERY_WORKER_SERVES` down its health pipe
(the one the pings travel on), and each worker's `/ready` answers 503 until its ping thread has read it.
A worker started after that (a replacement) finds the notice waiting in its pipe before its first ping.

The notice used to be a marker file in a temporary directory of the supervisor's: with no writable
temporary directory (a read-only root file system, `docker run --read-only`) the supervisor could not
start at all. The pipe needs no file system, and no path has to reach the workers through the
environment (a stray one inherited by a single process once held its `/ready` at 503).

A process is supervised when its worker process says so (`expect_supervisor`, called in the worker
before its app is built). Any other (one worker serving in process, an app built by a test) is ready as
soon as it is itself.

Readiness is a start-up gate. Once every worker has served, a worker that dies and is replaced does not
make the instance unready again: its connections went with it, new ones go to the workers that accept,
and liveness (`/health`) is answered by each process for itself.
"""

from __future__ import annotations

EVERY_WORKER_SERVES = b"every worker serves"
"""The supervisor's notice on a worker's health pipe (a ping is any other message, and is answered)."""

_supervised = False
_every_worker_serves = False


def expect_supervisor() -> None:
    """In a worker process, before its app is built: `/ready` waits for the supervisor's notice."""
    global _supervised
    _supervised = True


def note_every_worker_serves() -> None:
    """In a worker process, on its ping thread: the supervisor said every worker serves (for good)."""
    global _every_worker_serves
    _every_worker_serves = True


def reset() -> None:
    """Forget both (tests only: a process is a worker, or not, for its whole life)."""
    global _supervised, _every_worker_serves
    _supervised = _every_worker_serves = False


class WorkersServing:
    """A worker's view of the instance: have all its sibling workers served yet?"""

    @classmethod
    def from_environment(cls) -> WorkersServing:
        """The view for this process (a worker waits for its supervisor's notice; any other process does not)."""
        return cls()

    def __call__(self) -> bool:
        """Whether every worker serves (once true, stays true: see the module's docstring)."""
        return not _supervised or _every_worker_serves
