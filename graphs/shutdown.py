"""The process-wide shutdown deadline: once the server is told to stop, no request runs past it.

The HTTP layer sets it once, when SIGTERM arrives (`librarian_svc.drain`); `AgentContext` takes the
earlier of its own deadline and this one. So CPU loops that call `check_deadline()` stop for a
shutdown exactly as they stop for their budget, in every request at once, without a context being
rebuilt, and from worker threads too (reading one float needs no lock).
"""

from __future__ import annotations

_deadline: float | None = None


def shutdown_deadline() -> float | None:
    """The `time.monotonic()` by which every request must have answered; None while not shutting down."""
    return _deadline


def set_shutdown_deadline(deadline: float | None) -> None:
    """Start (or, for tests, clear) the shutdown: requests still running at `deadline` answer TIMEOUT."""
    global _deadline
    _deadline = deadline
