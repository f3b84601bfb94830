"""Shutdown without a 500: on SIGTERM every request in flight finishes or answers TIMEOUT, then the process exits.

Cloud Run sends SIGTERM and kills the instance 10 s later. uvicorn on its own stops accepting, waits
`timeout_graceful_shutdown` for requests, then cancels them: a step waiting on the model got an HTTP
500 with a CancelledError traceback, and a step busy on the CPU could not be cancelled at all (exit
29 s after SIGTERM). Here the signal instead starts a drain, in three steps:

1. at once, the process-wide shutdown deadline (`graphs.shutdown`) is set to `SHUTDOWN_GRACE_S`
   minus `RESPONSE_MARGIN_S` from now. Every request's effective deadline is now at most that, so
   CPU loops calling `AgentContext.check_deadline()` stop there, on the event loop or on a thread;
2. on the event loop, the `asyncio.timeout` of every step in flight (`bounded`) is moved to that
   deadline, so a step waiting on the model ends with the runner's usual ERROR TIMEOUT carrying the
   request's own state: the caller retries the step elsewhere, as after any timeout;
3. a watchdog thread ends the process `FORCED_EXIT_MARGIN_S` after uvicorn's own drain would have
   given up, in case some code neither awaits nor checks its deadline (no request may outlive
   Cloud Run's SIGKILL by holding the event loop).

The handler wraps uvicorn's own (it still stops the listener and waits for connections); it is
installed in each worker process, after uvicorn installed its handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

import structlog

from graphs.shutdown import set_shutdown_deadline, shutdown_deadline

log = structlog.get_logger(__name__)

RESPONSE_MARGIN_S = 0.5
"""Requests answer this long before `SHUTDOWN_GRACE_S` ends, so their responses are written before uvicorn gives up."""

FORCED_EXIT_MARGIN_S = 0.5
"""The watchdog ends the process this long after uvicorn's graceful-shutdown timeout."""

_timers: set[asyncio.Timeout] = set()
_loop: asyncio.AbstractEventLoop | None = None


def is_draining() -> bool:
    """True once a shutdown has begun in this process."""
    return shutdown_deadline() is not None


MIN_UVICORN_GRACE_S = 1.0
"""uvicorn's graceful-shutdown timeout is never shorter: with `SHUTDOWN_GRACE_S=0` the answers still get written."""


def uvicorn_grace_s(grace_s: float) -> float:
    """The graceful-shutdown timeout given to uvicorn for `SHUTDOWN_GRACE_S`: the same, not rounded (at least 1 s).

    uvicorn annotates it as whole seconds but hands it to `asyncio.wait_for`, which takes any. Rounded up, as it
    was, 8.2 s became 9 and moved the watchdog and the supervisor's deadline with it: the process could exit 10.1 s
    after SIGTERM, past Cloud Run's 10 s (`workers.exit_within_s` is the bound).
    """
    return max(MIN_UVICORN_GRACE_S, grace_s)


def _cut_timers() -> None:
    """On the event loop: no step in flight may wait past the shutdown deadline."""
    deadline = shutdown_deadline()
    if deadline is None:
        return
    loop = asyncio.get_running_loop()
    when = loop.time() + max(0.0, deadline - time.monotonic())
    for timer in list(_timers):
        current = timer.when()
        if current is None or current > when:
            with contextlib.suppress(RuntimeError):  # it is expiring or done: the step answers anyway
                timer.reschedule(when)


@contextmanager
def bounded(timer: asyncio.Timeout) -> Iterator[None]:
    """Inside a request's `asyncio.timeout`: let a shutdown move its deadline earlier."""
    _timers.add(timer)
    try:
        if is_draining():  # the step starts during a drain: it has only what is left of it
            _cut_timers()
        yield
    finally:
        _timers.discard(timer)


def begin(grace_s: float, *, loop: asyncio.AbstractEventLoop | None = None, force_exit: bool = False) -> None:
    """Start the drain (idempotent): set the shutdown deadline, cut the steps' timeouts, arm the watchdog.

    Safe from a signal handler: it sets one float, schedules the rest on `loop` (thread-safe call)
    and starts a thread; it takes no lock that the interrupted code might hold.
    """
    if is_draining():
        return
    now = time.monotonic()
    answer_within = max(0.0, grace_s - RESPONSE_MARGIN_S)
    set_shutdown_deadline(now + answer_within)
    target = loop or _loop
    if target is not None and not target.is_closed():
        with contextlib.suppress(RuntimeError):  # the loop closed in between
            target.call_soon_threadsafe(_announce_and_cut, answer_within, len(_timers))
    if force_exit:
        exit_after = uvicorn_grace_s(grace_s) + FORCED_EXIT_MARGIN_S
        threading.Thread(target=_exit_if_still_running, args=(exit_after,), name="drain-watchdog", daemon=True).start()


def _announce_and_cut(answer_within: float, in_flight: int) -> None:
    log.info(
        "shutting down: steps in flight answer within the grace period",
        answer_within_s=answer_within,
        in_flight=in_flight,
    )
    _cut_timers()


def exit_now(status: int) -> NoReturn:
    """End the process without tearing the interpreter down (output flushed first).

    Used once serving is over (requests drained, model clients closed, workers joined: finalising the
    heap took the supervisor 1.5 s of CPU on a busy machine, time Cloud Run's 10 s do not have), and by
    the watchdog when a worker overruns its grace period.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _exit_if_still_running(delay_s: float) -> None:
    time.sleep(delay_s)
    log.error("shutdown overran its grace period: exiting now", after_s=delay_s, pid=os.getpid())
    exit_now(1)


def install_signal_handlers(grace_s: float) -> None:
    """Wrap the running server's SIGTERM/SIGINT handlers so they start the drain first (main thread only)."""
    global _loop
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        _loop = asyncio.get_running_loop()
    except RuntimeError:  # not serving (a test built the app outside a server)
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def on_signal(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            begin(grace_s, force_exit=True)
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, on_signal)


def reset() -> None:
    """Forget a drain (tests only: a process drains once)."""
    global _loop
    set_shutdown_deadline(None)
    _timers.clear()
    _loop = None
