"""A worker process: forked from a preloaded fork server, answering health pings from its event loop.

**Health from the event loop.** uvicorn's worker answers the supervisor's ping from a thread of its
own. That thread answers while the event loop is stuck (a CPU loop that never awaits, a blocking call
by mistake), so the supervisor kept such a worker forever. With a listening socket per worker
(`worker_sockets`), the kernel goes on giving the stuck worker its share of new connections, and they
wait with it. Here the thread only reads the ping; once the server has started, the answer is sent by
a callback on the event loop. A loop that does not run for `WORKER_HUNG_AFTER_S` leaves the ping
unanswered, and the supervisor (`workers.Supervisor`) kills the worker and starts another on the same
socket. While the worker starts (building the app runs on the loop before it serves), the thread
answers "not started yet" itself, as uvicorn's does, so a start that takes long is bounded by the
supervisor's start allowance (`worker_health.WORKER_START_ALLOWANCE_S`). The thread must still answer
within `WORKER_HUNG_AFTER_S` meanwhile, as it does unless the whole process is frozen.

**Forked, not spawned.** uvicorn spawns each worker: a fresh interpreter that imports everything
itself. Here workers are forked from a fork server (a child of the supervisor) that imported the
service's modules once (`worker_preload`): a worker starts in a fraction of the time, which is how
soon a dead or hung worker's socket is served again, and shares those modules' memory with the other
workers (`python -m bench.workers --compare-spawn`).

**Stopping with the supervisor.** uvicorn's workers served on as orphans when their supervisor died,
holding the port: starting the service again failed with "address in use" until someone killed them.
(In a container the supervisor is the first process and its death ends them all; run directly, on a
VM or in a shell, nothing did.) Here the worker closes its copy of the supervisor's end of the health
pipe, so the supervisor's death closes the pipe: the ping thread reads the end and sends the worker
SIGTERM, and it drains and exits as on any shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.process
import os
import signal
import threading
from multiprocessing.process import BaseProcess
from socket import socket

import structlog
import uvicorn
from uvicorn._subprocess import subprocess_started
from uvicorn.supervisors.multiprocess import Process

from librarian_svc import drain, instance_readiness

log = structlog.get_logger(__name__)

START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
"""How workers start: forked from the fork server where there is one (Linux, macOS), else spawned as uvicorn does."""
PRELOAD = ["librarian_svc.worker_preload"]
"""What the fork server imports before it forks a worker."""


class LoopAnsweringProcess(Process):
    """uvicorn's worker process, forked from the fork server, with the health answer sent from its event loop."""

    _loop: asyncio.AbstractEventLoop | None = None
    """The worker's event loop, set in the worker process when it starts running (never pickled: it is None then)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket]) -> None:
        super().__init__(config, sockets)
        self._spawned: BaseProcess | None = None
        """uvicorn's own (spawned) process, kept in case the fork server cannot start."""
        if START_METHOD == "forkserver":
            self._spawned = self.process
            fork_server = multiprocessing.get_context("forkserver")
            fork_server.set_forkserver_preload(PRELOAD)
            kwargs = {"config": config, "target": self.target, "sockets": sockets, "stdin_fileno": None}
            # uvicorn annotates it a SpawnProcess, and uses only what every multiprocessing process has
            self.process = fork_server.Process(target=subprocess_started, kwargs=kwargs)  # type: ignore[assignment]

    def start(self) -> None:
        """Start the worker; spawn it if the fork server cannot fork it.

        The fork server listens on a Unix socket in a temporary directory: on a file system mounted
        read-only with no writable temporary directory it cannot start, and this worker and every later
        one are spawned, as uvicorn's are. A fork server that runs but fails while it forks this worker
        (it died meanwhile: its connection is refused or closes) costs only this start: the worker is
        spawned, and the next start brings up a new fork server.

        Not covered: a fork server that dies after forking this worker but before it reports the pid. The
        forked worker runs on, unknown to the supervisor, beside the spawned one (the same socket and health
        pipe) until the supervisor's end of the pipe closes; it then drains and stays a zombie until the
        supervisor exits (README, Workers).
        """
        global START_METHOD
        if self._spawned is not None:
            try:
                multiprocessing.forkserver.ensure_running()
            except OSError as exc:
                log.warning("cannot start the fork server: spawning the workers instead", error=str(exc))
                START_METHOD = "spawn"
                self._spawn()
                return
        try:
            self.process.start()
        except (OSError, EOFError) as exc:
            if self._spawned is None:
                raise
            log.warning("the fork server failed to fork a worker: spawning this one", error=repr(exc))
            self._spawn()

    def _spawn(self) -> None:
        """Start uvicorn's own (spawned) process in place of the forked one."""
        assert self._spawned is not None
        self.process, self._spawned = self._spawned, None  # type: ignore[assignment]
        self.process.start()

    def terminate(self) -> None:
        """SIGTERM (the worker drains), keeping the health pipe open until `join`.

        uvicorn's closes the pipe at once, and the worker's ping thread could read its end before the
        drain began and take it for the supervisor's death.
        """
        if self.process.exitcode is None and self.process.pid is not None:
            os.kill(self.process.pid, signal.SIGTERM)

    def join(self) -> None:
        """Wait for the worker to exit, then close the health pipe."""
        super().join()
        self.parent_conn.close()
        self.child_conn.close()

    def target(self, sockets: list[socket] | None = None) -> None:
        """In the worker: answer pings from a thread, serve on a loop of our own making (so the thread can reach it)."""
        self.parent_conn.close()  # the supervisor's end: once only the supervisor holds it, its death closes the pipe
        instance_readiness.expect_supervisor()  # `/ready` waits for the supervisor's word (`pong` hears it)
        server = self.server  # made here, before the thread that reads it starts
        threading.Thread(target=self.always_pong, daemon=True, name="health-ping").start()
        with asyncio.Runner(loop_factory=self.config.get_loop_factory()) as runner:
            self._loop = runner.get_loop()
            runner.run(server.serve(sockets))

    def always_pong(self) -> None:
        """Answer pings until the pipe closes: the supervisor is gone, so drain and stop as on SIGTERM."""
        try:
            while True:
                self.pong()
        except (EOFError, OSError):
            if not drain.is_draining():  # else a shutdown is under way, and this SIGTERM changes nothing
                log.warning("the supervisor is gone: stopping", pid=os.getpid())
            os.kill(os.getpid(), signal.SIGTERM)

    def pong(self) -> None:
        """Read one message: a ping is answered now while starting, else from the event loop when the loop next runs.

        The supervisor's notice that every worker serves (`instance_readiness`) is noted and not answered.
        """
        if self.child_conn.recv() == instance_readiness.EVERY_WORKER_SERVES:
            instance_readiness.note_every_worker_serves()
            return
        loop = self._loop
        if loop is None or not self.server.started:
            self.child_conn.send(False)
            return
        try:
            loop.call_soon_threadsafe(self.answer)
        except RuntimeError:  # the loop has closed: the worker is exiting, and an answer would say it lives
            return

    def answer(self) -> None:
        """On the event loop: tell the supervisor the worker serves (uvicorn keeps `started` true while it drains).

        A closed pipe is the ping thread's to act on (`always_pong`).
        """
        with contextlib.suppress(OSError):
            self.child_conn.send(self.server.started)


def start_unpolled(process: Process) -> None:
    """Start a worker's process, and take it out of multiprocessing's own list of children.

    multiprocessing polls every child it started whenever it starts another (`process._cleanup`), and
    joins them at interpreter exit. The supervisor waits for its workers itself. A forked worker's exit
    status can be read once only: when a replacement started on its thread (`worker_starts`) polled a
    worker as the supervisor did, one of the two read nothing and took the worker for one whose fork
    server had died (status 255), and a worker that could not start was replaced instead of stopping
    the instance.
    """
    process.start()
    multiprocessing.process._children.discard(process.process)  # type: ignore[attr-defined]


def release(process: Process) -> None:
    """Close the descriptors an exited worker's process object holds: its health pipe, its status pipe.

    The process object and its target (a method of the worker object) form a cycle, so without this
    their descriptors stayed open until a cyclic collection: two more for each replaced worker, and a
    crash loop kept adding them. Only the descriptors are closed (multiprocessing's `Popen.close`), not the
    process object (`BaseProcess.close`): its pid and exit status stay readable, so a released worker
    that the shutdown still looks at (one lost with its fork server, left in its place) reads as exited.
    Idempotent.
    """
    process.parent_conn.close()
    process.child_conn.close()
    popen = process.process._popen  # type: ignore[attr-defined]  # BaseProcess keeps no public handle on it
    if popen is not None and popen.poll() is not None:
        popen.close()
