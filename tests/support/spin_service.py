"""`python -m tests.support.spin_service`: the real service plus one route that keeps a CPU busy.

`POST /test/spin` runs on the event loop without ever awaiting, the hardest case for a shutdown: no
`asyncio` timeout or cancellation can reach it. With `?check=true` it calls the request context's
`check_deadline()` between chunks, as the agents' CPU loops do, and answers how long it ran once that
raises; with `?check=false` it spins for `seconds`, deaf to everything. Served exactly as the service
is (`librarian_svc.__main__.main`, any `WEB_CONCURRENCY`), only with this route added.

Nothing heavy is imported at module level: it is the supervisor's `__main__`, and each worker imports
it by the app factory's import string, where the service's start-up pauses the collector.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from librarian_svc.__main__ import main

if TYPE_CHECKING:
    from litestar import Litestar

APP_FACTORY = "tests.support.spin_service:create_app"
CHUNK = 20_000


def create_app() -> Litestar:
    """The worker's app with the spin route (uvicorn's factory for this module)."""
    import time

    from litestar import post
    from litestar.di import NamedDependency

    from graphs.errors import DeadlineExceeded
    from librarian_svc.services import Services
    from librarian_svc.workers import create_worker_app

    # The annotations are strings (`from __future__ import annotations`) naming these local imports.
    namespace = {"NamedDependency": NamedDependency, "Services": Services}

    @post("/test/spin", status_code=200, sync_to_thread=False, signature_namespace=namespace)
    def spin(services: NamedDependency[Services], check: bool = True, seconds: float = 60.0) -> dict[str, object]:
        """Spin on the loop; stop at the (effective) deadline when `check`, else after `seconds`."""
        context = services.request_context(int(seconds * 1000))
        started = time.monotonic()
        try:
            while time.monotonic() - started < seconds:
                sum(range(CHUNK))
                if check:
                    context.check_deadline()
        except DeadlineExceeded:
            return {"stopped": "deadline", "after_s": round(time.monotonic() - started, 3)}
        return {"stopped": "done", "after_s": round(time.monotonic() - started, 3)}

    return create_worker_app(extra_route_handlers=[spin])


if __name__ == "__main__":
    sys.exit(main(APP_FACTORY))
