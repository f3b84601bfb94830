"""A worker process whose health answer comes from its event loop, so a blocked loop counts as hung.

uvicorn's worker answers the supervisor's ping from a thread of its own. That thread answers while
the event loop is stuck (a CPU loop that never awaits, a blocking call by mistake), so the supervisor
kept such a worker forever. With a listening socket per worker (`worker_sockets`), the kernel goes on
giving the stuck worker its share of new connections, and they wait with it: the instance serves
half its clients.

Here the thread only reads the ping; once the server has started, the answer is sent by a callback
on the event loop. A loop that does not run for `WORKER_HUNG_AFTER_S` leaves the ping unanswered, and
the supervisor (`workers.Supervisor.keep_subprocess_alive`) kills the worker and starts another on
the same socket. While the worker starts (importing, building the app, all on the loop before it
serves), the thread answers "not started yet" itself, as uvicorn's does: start-up is bounded by the
supervisor's start allowance (`worker_health.WORKER_START_ALLOWANCE_S`), not by this limit.

A worker also stops when its supervisor dies (Linux: `PR_SET_PDEATHSIG`). uvicorn's workers served on as
orphans, holding the port: a supervisor started again then failed with "address in use" until someone
killed them by hand. In a container the supervisor is the first process and its death ends them all;
run directly (a VM, a developer's shell) nothing did.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
import threading
from socket import socket

import structlog
import uvicorn
from uvicorn.supervisors.multiprocess import Process

log = structlog.get_logger(__name__)

PR_SET_PDEATHSIG = 1
"""prctl(2): the signal the kernel sends this process when the thread that started it ends."""


def stop_with(supervisor_pid: int) -> None:
    """In the worker: have the kernel send SIGTERM (the drain) when the supervisor dies; stop now if it already has."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:  # serve on: an orphan is better than no worker
        log.warning("cannot ask to stop with the supervisor", error=os.strerror(ctypes.get_errno()))
        return
    if os.getppid() != supervisor_pid:  # it died before the request took effect: nobody would signal
        os.kill(os.getpid(), signal.SIGTERM)


class LoopAnsweringProcess(Process):
    """uvicorn's worker process, with the health answer sent from the worker's event loop once it serves."""

    _loop: asyncio.AbstractEventLoop | None = None
    """The worker's event loop, set in the worker process when it starts running (never pickled: it is None then)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket]) -> None:
        super().__init__(config, sockets)
        self.supervisor_pid = os.getpid()
        """The process that starts this worker (pickled to the worker with the rest)."""

    def target(self, sockets: list[socket] | None = None) -> None:
        """In the worker: answer pings from a thread, serve on a loop of our own making (so the thread can reach it)."""
        stop_with(self.supervisor_pid)
        server = self.server  # made here, before the thread that reads it starts
        threading.Thread(target=self.always_pong, daemon=True, name="health-ping").start()
        with asyncio.Runner(loop_factory=self.config.get_loop_factory()) as runner:
            self._loop = runner.get_loop()
            runner.run(server.serve(sockets))

    def pong(self) -> None:
        """Read one ping; answer it now while starting, else from the event loop when the loop next runs."""
        self.child_conn.recv()
        loop = self._loop
        if loop is None or not self.server.started:
            self.child_conn.send(False)
            return
        try:
            loop.call_soon_threadsafe(self.answer)
        except RuntimeError:  # the loop has closed: the worker is exiting, and an answer would say it lives
            return

    def answer(self) -> None:
        """On the event loop: tell the supervisor the worker serves (uvicorn keeps `started` true while it drains)."""
        self.child_conn.send(self.server.started)
