"""`python -m librarian_svc`: validate settings, configure logging, serve with uvicorn.

Settings are loaded before anything heavy, and a `ConfigError` ends the process with one
line on stderr and exit status 2. uvicorn handles SIGTERM: it stops accepting connections
and lets in-flight requests finish within `SHUTDOWN_GRACE_S` (Cloud Run allows 10 s).

Start-up builds about 200,000 objects that live as long as the process (modules, compiled graphs,
the app). Left to the cyclic garbage collector they are scanned on every full collection, a pause
of over 100 ms that lands on whichever requests are in flight. So collection is off while they are
built and they are then frozen out of its reach (`gc.freeze`), which is what keeps one worker's
p99 near the model latency with 80 sessions in flight (`python -m bench.librarian_concurrency`).
"""

from __future__ import annotations

import gc
import signal
import sys
from types import FrameType

from librarian_svc.settings import ConfigError, load_settings


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> int:
    """Run the service until SIGTERM/SIGINT; return the process exit status."""
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"librarian-svc: configuration error: {exc}", file=sys.stderr)
        return 2

    gc.disable()  # see the module docstring
    try:
        import uvicorn

        from librarian_svc.app import create_app
        from librarian_svc.log_setup import configure_logging

        configure_logging(settings.log_format, settings.log_level)
        app = create_app(settings)
    except ConfigError as exc:
        print(f"librarian-svc: configuration error: {exc}", file=sys.stderr)
        return 2
    finally:
        gc.freeze()
        gc.enable()
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
