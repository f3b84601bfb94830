"""`python -m librarian_svc`: validate settings, configure logging, serve with uvicorn.

Settings are loaded before anything heavy, and a `ConfigError` ends the process with one
line on stderr and exit status 2. uvicorn handles SIGTERM: it stops accepting connections
and lets in-flight requests finish within `SHUTDOWN_GRACE_S` (Cloud Run allows 10 s).

The cyclic garbage collector is paused while the process starts (`startup_gc`): start-up only
creates objects that live as long as the process, and collecting them cost about an eighth of
the cold start. Nothing heavy is imported at module level here, so the pause covers every import.
The start-up heap is then frozen out of the collector's reach: otherwise each full collection
while serving rescans those ~200,000 objects, a pause of over 100 ms for every request in flight
(with 80 Librarian sessions on one worker it doubled p99; `python -m bench.librarian_concurrency`).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from librarian_svc.startup_gc import collector_paused, prepare_collector_for_serving


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> int:
    """Run the service until SIGTERM/SIGINT; return the process exit status."""
    with collector_paused():
        from librarian_svc.settings import ConfigError, load_settings

        try:
            settings = load_settings()
        except ConfigError as exc:
            print(f"librarian-svc: configuration error: {exc}", file=sys.stderr)
            return 2

        import uvicorn

        from librarian_svc.app import create_app
        from librarian_svc.log_setup import configure_logging

        configure_logging(settings.log_format, settings.log_level)
        try:
            app = create_app(settings)
        except ConfigError as exc:
            print(f"librarian-svc: configuration error: {exc}", file=sys.stderr)
            return 2
        prepare_collector_for_serving()
    # uvicorn restores the previous SIGTERM handler after its graceful shutdown and re-raises the
    # signal; with this handler that ends the process with status 0 instead of "killed by SIGTERM".
    signal.signal(signal.SIGTERM, _exit_cleanly)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        loop="auto",
        http="auto",
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace_s)),
        # Longer than clients keep idle connections (Go's default is 90 s), so the server never closes a
        # pooled connection just as the client reuses it (the client would see a reset mid-request).
        timeout_keep_alive=settings.keepalive_timeout_s,
        server_header=False,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
