"""Whether every worker of the instance serves: what `/ready` waits for when there are several.

A load balancer (Cloud Run, once its startup probe passes) opens its keep-alive connections as soon as
`/ready` answers 200, and a connection stays with the worker that accepted it for its whole life. Were
the instance ready when its first worker is, those early connections would all land on that worker
and the instance would serve on one core while it pays for several (`python -m
bench.librarian_concurrency --workers 2` measured exactly that). So the supervisor creates a marker
file once every worker has answered its health ping as serving, and each worker's `/ready` answers 503
until it sees that file: one `stat` per probe, then remembered.

The marker's path reaches the workers through the environment (`MARKER_ENV`): they inherit the
supervisor's environment as it was when their fork server started (the first worker's start), and the
supervisor sets the path before that. Without it (one worker
serving in process, or an app built by a test) the instance is ready as soon as this process is.

Readiness is a start-up gate. Once every worker has served, a worker that dies and is replaced does not
make the instance unready again: its connections went with it, new ones go to the workers that accept,
and liveness (`/health`) is answered by each process for itself.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

MARKER_ENV = "LIBRARIAN_SVC_WORKERS_SERVING_MARKER"
"""Set by the supervisor for its workers, never by hand: the file whose existence means every worker serves."""

MARKER_NAME = "every-worker-serves"


class WorkersServing:
    """A worker's view of the instance: have all its sibling workers served yet?"""

    def __init__(self, marker: Path | None) -> None:
        self._marker = marker
        self._seen = marker is None

    @classmethod
    def from_environment(cls) -> WorkersServing:
        """The view the supervisor set up for this process (none: a single process, ready on its own)."""
        marker = os.environ.get(MARKER_ENV)
        return cls(Path(marker) if marker else None)

    def __call__(self) -> bool:
        """Whether every worker serves (once true, stays true: see the module's docstring)."""
        if not self._seen:
            self._seen = self._marker is not None and self._marker.exists()
        return self._seen


class ServingMarker:
    """The supervisor's side: a private directory for the marker, its path handed to the workers it starts."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="librarian-svc-workers-"))
        self.path = self.directory / MARKER_NAME
        self.is_set = False
        os.environ[MARKER_ENV] = str(self.path)  # before any worker starts: they inherit it

    def set(self) -> bool:
        """Create the marker; True the first time (the instance just became ready), False after, with no file work."""
        if self.is_set:
            return False
        self.path.touch()
        self.is_set = True
        return True

    def remove(self) -> None:
        """Take the directory away when the supervisor stops."""
        shutil.rmtree(self.directory, ignore_errors=True)
