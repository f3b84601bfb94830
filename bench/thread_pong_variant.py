"""The service with uvicorn's health answer from a thread of the worker: `bench.stuck_worker`'s contrast.

`python -m bench.thread_pong_variant` runs `tests.support.spin_service` (the service plus a route that holds
the event loop) unchanged except that its workers are uvicorn's own `Process`, which answers the
supervisor's health ping from a thread: a worker whose event loop is stuck goes on answering, and is
never replaced. This is how the service's workers answered before `librarian_svc/worker_process.py`.
Never used in production.
"""

from __future__ import annotations

import sys

from uvicorn.supervisors.multiprocess import Process

from librarian_svc.workers import Supervisor

MODULE = "bench.thread_pong_variant"

if __name__ == "__main__":
    from librarian_svc.__main__ import main
    from tests.support.spin_service import APP_FACTORY

    Supervisor.process_type = Process
    sys.exit(main(APP_FACTORY))
