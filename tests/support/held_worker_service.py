"""`python -m tests.support.held_worker_service`: the real service, whose workers after the first wait for a go.

With `HELD_WORKERS_DIR` set, the first worker to start builds and serves at once; every later one waits
before building its app until the test deletes `HELD_WORKERS_DIR/hold` (or 60 s pass). A test can then
look at the instance while one worker serves and another does not yet. With `HELD_WORKERS_START_ALLOWANCE_S`
the supervisor gives a new worker that many seconds to serve instead of `WORKER_START_ALLOWANCE_S`, so a
test sees a held worker replaced. Served exactly as the service is (`librarian_svc.__main__.main`, any
`WEB_CONCURRENCY`).

Nothing heavy is imported at module level: it is the supervisor's `__main__`, and each worker imports
it by the app factory's import string, where the service's start-up pauses the collector.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from librarian_svc.__main__ import main

if TYPE_CHECKING:
    from litestar import Litestar

APP_FACTORY = "tests.support.held_worker_service:create_app"
HOLD_ENV = "HELD_WORKERS_DIR"
ALLOWANCE_ENV = "HELD_WORKERS_START_ALLOWANCE_S"
HOLD_LIMIT_S = 60.0


def create_app() -> Litestar:
    """The worker's app, built at once by the first worker and after the hold by the others."""
    from librarian_svc.workers import create_worker_app

    directory = Path(os.environ[HOLD_ENV])
    try:
        os.close(os.open(directory / "first", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # not the first worker: wait for the test's go
        deadline = time.monotonic() + HOLD_LIMIT_S
        while (directory / "hold").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return create_worker_app()


if __name__ == "__main__":
    if ALLOWANCE_ENV in os.environ:  # read by the supervisor, which runs in this process
        from librarian_svc import worker_health

        worker_health.WORKER_START_ALLOWANCE_S = float(os.environ[ALLOWANCE_ENV])
    sys.exit(main(APP_FACTORY))
