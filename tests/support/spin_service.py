"""`python -m tests.support.spin_service`: the real service plus one route that keeps a CPU busy.

`POST /test/spin` runs on the event loop without ever awaiting, the hardest case for a shutdown: no
`asyncio` timeout or cancellation can reach it. With `?check=true` it calls the request context's
`check_deadline()` between chunks, as the agents' CPU loops do, and answers how long it ran once that
raises; with `?check=false` it spins for `seconds`, deaf to everything. Served exactly as the service
is (`librarian_svc.__main__.main`, any `WEB_CONCURRENCY`), only with this route added.
"""

from __future__ import annotations

import sys
import time

from litestar import Litestar, post
from litestar.di import NamedDependency

from graphs.errors import DeadlineExceeded
from librarian_svc.__main__ import main
from librarian_svc.services import Services
from librarian_svc.workers import create_worker_app

APP_FACTORY = "tests.support.spin_service:create_app"
CHUNK = 20_000


def _chunk() -> None:
    sum(range(CHUNK))


@post("/test/spin", status_code=200, sync_to_thread=False)
def spin(services: NamedDependency[Services], check: bool = True, seconds: float = 60.0) -> dict[str, object]:
    """Spin on the loop; stop at the (effective) deadline when `check`, else after `seconds`."""
    context = services.request_context(int(seconds * 1000))
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            _chunk()
            if check:
                context.check_deadline()
    except DeadlineExceeded:
        return {"stopped": "deadline", "after_s": round(time.monotonic() - started, 3)}
    return {"stopped": "done", "after_s": round(time.monotonic() - started, 3)}


def create_app() -> Litestar:
    """The worker's app with the spin route (uvicorn's factory for this module)."""
    return create_worker_app(extra_route_handlers=[spin])


if __name__ == "__main__":
    sys.exit(main(APP_FACTORY))
