"""Serving on every vCPU: `WEB_CONCURRENCY` uvicorn worker processes, each on a listening socket of its own.

A step's CPU work runs on one core per process (the GIL), so with `cpu: "2"` one process left a
paid vCPU idle whenever steps were CPU-bound. The supervisor binds each worker's socket
(`worker_sockets`: SO_REUSEPORT, so the kernel spreads new connections over the workers) and
starts the workers (`worker_process`: forked from a fork server that imported the service's modules
once). Each builds its app through `create_worker_app` (an import string, which is why uvicorn
refused `WEB_CONCURRENCY=2` with an app object), with its own model clients on its own event loop.

Each worker does what the single process did: pause the collector while it builds (`startup_gc`),
freeze the start-up heap, install the drain on SIGTERM (`drain`), apply the read timeout
(`http_protocol`). The parent only supervises: it forwards SIGTERM to the workers, restarts one
that dies, and stops (with the worker's status) when a worker cannot start, since every restart
would fail the same way.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing.process
import os
import pickle
import secrets
import shutil
import sys
import time
from typing import TYPE_CHECKING

import structlog
import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import Process

from librarian_svc import drain
from librarian_svc.http_protocol import ReadTimeoutProtocol
from librarian_svc.instance_readiness import EVERY_WORKER_SERVES
from librarian_svc.malloc_thresholds import fix_malloc_thresholds
from librarian_svc.settings import CONFIG_ERROR_STATUS, report_config_error
from librarian_svc.startup_gc import collections_so_far, collector_paused, prepare_collector_for_serving
from librarian_svc.worker_health import SupervisedClock, WorkerHealth
from librarian_svc.worker_orphans import LOST_STATUS, OrphanedWorkers, become_subreaper
from librarian_svc.worker_process import LoopAnsweringProcess, release, start_unpolled
from librarian_svc.worker_sockets import WorkerSockets
from librarian_svc.worker_starts import WorkerStarts

if TYPE_CHECKING:
    from collections.abc import Sequence

    from litestar import Litestar
    from litestar.types import ControllerRouterHandler

    from librarian_svc.settings import Settings

log = structlog.get_logger(__name__)

APP_FACTORY = "librarian_svc.workers:create_worker_app"
"""What uvicorn calls in each worker (an import string: the worker process does not share the supervisor's objects)."""

SIGNAL_TICK_S = 0.1
"""How often the supervisor looks at signals (uvicorn's 0.5 s would take a tenth of Cloud Run's 10 s)."""
SUPERVISOR_FAILURE = 1
"""The exit status when supervising failed unexpectedly (a bug: logged with its traceback, the workers drained)."""
STRAGGLER_MARGIN_S = 2 * drain.FORCED_EXIT_MARGIN_S
"""At shutdown, how long past uvicorn's graceful-shutdown timeout the supervisor waits for a worker before
SIGKILL: twice the margin after which a draining worker's own watchdog (`drain`) has ended it."""

_preloaded: list[Settings] = []


def exit_within_s(grace_s: float, workers: int) -> float:
    """The longest a process serving with `SHUTDOWN_GRACE_S=grace_s` runs after SIGTERM (README, configuration table).

    One worker: its drain's watchdog ends it `FORCED_EXIT_MARGIN_S` after uvicorn's graceful-shutdown timeout.
    Several: the supervisor notices the signal within a tick, then SIGKILLs a worker still running
    `STRAGGLER_MARGIN_S` after that timeout, and exits once it is reaped (milliseconds, not counted here).
    """
    drained = drain.uvicorn_grace_s(grace_s)
    if workers == 1:
        return drained + drain.FORCED_EXIT_MARGIN_S
    return SIGNAL_TICK_S + drained + STRAGGLER_MARGIN_S


def use_settings(settings: Settings) -> None:
    """The settings the in-process worker uses (the single-process path has them already)."""
    _preloaded[:] = [settings]


def create_worker_app(extra_route_handlers: Sequence[ControllerRouterHandler] = ()) -> Litestar:
    """The app factory uvicorn calls: build the app with the collector paused, then get the process ready to serve.

    A configuration error prints one line and exits with status 2; any other start-up failure
    exits with uvicorn's start-up failure status (3). Either stops the supervisor instead of a
    restart loop.
    """
    started = time.perf_counter()
    collections = collections_so_far()
    with collector_paused():
        from librarian_svc.settings import ConfigError, load_settings

        try:
            settings = _preloaded[0] if _preloaded else load_settings()
            from librarian_svc.app import create_app
            from librarian_svc.http_protocol import configure, connection_cap, raise_descriptor_limit
            from librarian_svc.log_setup import configure_logging

            configure_logging(settings.log_format, settings.log_level)
            app = create_app(settings, extra_route_handlers=extra_route_handlers)
        except ConfigError as exc:
            sys.exit(report_config_error(exc))
        except Exception as exc:  # a bug: the traceback, and no restart loop
            log.exception("worker failed to start", exc_info=exc)
            sys.exit(STARTUP_FAILURE)
        descriptor_limit = raise_descriptor_limit()
        max_connections = connection_cap(settings.max_connections_per_worker, descriptor_limit)
        configure(settings.request_read_timeout_s, max_connections)
        drain.install_signal_handlers(settings.shutdown_grace_s)
        prepare_collector_for_serving()
        malloc_thresholds_fixed = fix_malloc_thresholds()
    log.info(
        "worker ready",
        pid=os.getpid(),
        start_up_ms=round((time.perf_counter() - started) * 1000),
        gc_enabled=gc.isenabled(),
        gc_frozen=gc.get_freeze_count(),
        gc_threshold=list(gc.get_threshold()),
        malloc_thresholds_fixed=malloc_thresholds_fixed,
        descriptor_limit=descriptor_limit,
        max_connections=max_connections,
        gc_collections_during_start_up=collections_so_far() - collections,
    )
    return app


def uvicorn_config(settings: Settings, app_factory: str = APP_FACTORY) -> uvicorn.Config:
    """The server configuration, the same for one worker or several (`app_factory`: tests add routes)."""
    return uvicorn.Config(
        app_factory,
        factory=True,
        workers=settings.web_concurrency,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        loop="auto",
        http=ReadTimeoutProtocol,
        timeout_worker_healthcheck=settings.worker_hung_after_s,
        # a float where uvicorn annotates int: it passes it to asyncio.wait_for (`drain.uvicorn_grace_s`)
        timeout_graceful_shutdown=drain.uvicorn_grace_s(settings.shutdown_grace_s),  # type: ignore[arg-type]
        # Longer than clients keep idle connections (Go's default is 90 s), so the server never closes a
        # pooled connection just as the client reuses it (the client would see a reset mid-request).
        timeout_keep_alive=settings.keepalive_timeout_s,
        server_header=False,
    )


def serve_in_process(config: uvicorn.Config) -> int:
    """One worker: serve in this process; the exit status."""
    server = uvicorn.Server(config)
    server.run()
    return 0 if server.started else STARTUP_FAILURE


def share_ephemeral_key(settings: Settings) -> None:
    """Without STATE_SIGNING_KEYS each worker would sign with its own key and refuse the others' tokens.

    One key is made here and handed to every worker through the environment they inherit, so the
    instance behaves as one process did (and says so, loudly, as that process did).
    """
    if settings.state.keys:
        return
    log.warning(
        "STATE_SIGNING_KEYS is not set: state tokens are signed with an ephemeral key shared by this instance's "
        "workers. Other instances (scale-out, a restart, a new revision) cannot read them and will refuse every "
        "session in flight; set STATE_SIGNING_KEYS to a shared secret (cloudrun.yaml takes it from Secret Manager)",
        state_keys="ephemeral",
        workers=settings.web_concurrency,
    )
    os.environ["STATE_SIGNING_KEYS"] = secrets.token_hex(32)


def share_worker_count(settings: Settings) -> None:
    """Hand the workers the number of workers the supervisor resolved, instead of `auto` for each to resolve.

    `WEB_CONCURRENCY=auto` reads the cgroup quota and the affinity (`cpus.available_cpus`). Resolved once,
    here, the workers inherit the number through the environment: they all load the count this supervisor
    started, and none reads the cgroup files again at start-up.
    """
    os.environ["WEB_CONCURRENCY"] = str(settings.web_concurrency)


class Supervisor(Multiprocess):
    """uvicorn's worker supervisor, reacting to signals within 0.1 s and stopping on a worker's config error."""

    failure: int | None = None
    """The exit status of a worker that could not start (the supervisor then stops)."""
    process_type: type[Process] = LoopAnsweringProcess
    """A worker's process: it answers health pings from its event loop (`worker_process`)."""

    def __init__(self, config: uvicorn.Config, sockets: WorkerSockets) -> None:
        super().__init__(config, sockets.bound)  # every socket bound so far: closed at shutdown
        self._sockets = sockets
        self._health: dict[int, WorkerHealth] = {}
        self._clock = SupervisedClock()
        self._orphans = OrphanedWorkers()
        self._starts = WorkerStarts()
        self._stop_by: float | None = None
        self._told: set[int] = set()
        """The workers (by `id`) sent SIGTERM at shutdown."""
        self._every_worker_serves = False
        """Set once every worker has served: each worker, and every later one, is told (`instance_readiness`)."""

    def run(self) -> None:
        """Start the first worker, the others once it serves; keep them alive until SIGTERM/SIGINT; drain them.

        The first worker starts alone: it has the CPU to itself meanwhile, and a configuration error is
        reported once, by one worker, and stops the start. The instance is ready (`/ready`) once every
        worker serves, not the first alone (`librarian_svc.instance_readiness`).
        """
        log.info("supervising workers", pid=os.getpid(), workers=self.processes_num)
        first = self._start_or_stop(0)
        if first is not None:
            self.processes.append(first)
            if self._until_first_serves():
                self._start_the_others()
        while not self.should_exit.wait(SIGNAL_TICK_S):
            self.handle_signals()
            self._tick()
        self._stop_workers()
        _remove_multiprocessing_temp_dir()
        log.info("workers stopped", pid=os.getpid())

    def _stop_workers(self) -> None:
        """Tell every worker to drain (a replacement being started, once it has started), and wait for them."""
        self.terminate_all()
        for started in self._starts.finish(self._shutdown_deadline()):  # none is pickling the sockets after this
            self._tell(started)
        for sock in self.sockets:  # the workers stop accepting as they drain, then the last copy of each closes
            sock.close()
        self.join_all()

    def _tick(self) -> None:
        """`keep_subprocess_alive`, and a bug in it stops the instance, draining, instead of escaping `run`."""
        try:
            self.keep_subprocess_alive()
        except Exception as exc:
            log.exception("supervising the workers failed: stopping", exc_info=exc)
            self.failure = SUPERVISOR_FAILURE
            self.should_exit.set()

    def _shutdown_deadline(self) -> float:
        """When the last worker must have exited: the drain's deadline and a margin, from the shutdown's start."""
        if self._stop_by is None:
            self._stop_by = time.monotonic() + (self.config.timeout_graceful_shutdown or 0) + STRAGGLER_MARGIN_S
        return self._stop_by

    def terminate_all(self) -> None:
        """SIGTERM every worker that has started, and the orphans of a dead fork server.

        A replacement whose start is under way (`_starts`) is told by `run` once it has started.
        """
        self._shutdown_deadline()
        for index, process in enumerate(self.processes):
            if index in self._starts or process.pid is None:
                continue
            if process.exitcode == LOST_STATUS:  # its fork server died since the last tick: it may run on, orphaned
                self._orphans.adopt(process)
            else:
                self._tell(process)
        self._orphans.tend()

    def _tell(self, process: Process) -> None:
        """SIGTERM `process` (it drains), once."""
        if id(process) not in self._told:
            self._told.add(id(process))
            process.terminate()

    def join_all(self) -> None:
        """Wait for the workers to exit, until the drain's deadline at the latest; SIGKILL any still running then.

        A worker that was still starting when SIGTERM came only notes it (uvicorn's start-up handler) and
        drains once it serves; one whose start hangs would otherwise keep the supervisor waiting for ever.
        The orphans of a dead fork server (one may die during the shutdown too) are waited for until the
        same deadline (`_orphans`).
        """
        deadline = self._shutdown_deadline()
        for process in self.processes:
            if process.pid is None:  # its start failed, or never returned: nothing to wait for
                continue
            if process.exitcode is None:  # a start given up on that has returned since: it was never told
                self._tell(process)
            process.process.join(max(0.0, deadline - time.monotonic()))
            if process.process.is_alive():
                log.warning("a worker did not stop in time: killing it", pid=process.pid)
                process.kill()
            if process.exitcode == LOST_STATUS:
                self._orphans.adopt(process)
                continue
            process.join()
            self._orphans.tend()  # orphans found meanwhile are told now, not after every join
        self._orphans.stop(deadline)

    def handle_hup(self) -> None:
        """Ignored (uvicorn restarts every worker): see `_keep_workers`."""
        self._keep_workers("SIGHUP")

    def handle_ttin(self) -> None:
        """Ignored (uvicorn adds a worker): see `_keep_workers`."""
        self._keep_workers("SIGTTIN")

    def handle_ttou(self) -> None:
        """Ignored (uvicorn retires a worker): see `_keep_workers`."""
        self._keep_workers("SIGTTOU")

    def _keep_workers(self, signal_name: str) -> None:
        """An instance runs `WEB_CONCURRENCY` workers for its whole life, each on its own socket.

        uvicorn's handlers of these signals add, retire or restart workers on every socket at once: an
        added worker would share the others' sockets (the accept race `worker_sockets` removes), a retired
        one would leave its socket with connections queued and nobody to accept them, and `/ready`, the
        memory arithmetic of `cloudrun.yaml` and the connection cap all count `WEB_CONCURRENCY` workers.
        To change the number, restart the instance with another `WEB_CONCURRENCY`.
        """
        log.warning("signal ignored: the instance keeps its WEB_CONCURRENCY workers", signal=signal_name)

    def _start(self, index: int) -> Process:
        """Start worker `index` (or its replacement) on its own listening socket (`worker_sockets`).

        The worker answers health pings from its event loop (`worker_process`), so a loop stuck for
        `WORKER_HUNG_AFTER_S` gets the worker replaced.
        """
        process = self._new_worker(index)
        start_unpolled(process)
        return process

    def _new_worker(self, index: int) -> Process:
        """Worker `index`'s process object (not started), on its own listening socket.

        A replacement started once the instance is ready finds the notice in its health pipe: the instance
        does not become unready again (`instance_readiness`).
        """
        process = self.process_type(self.config, self._sockets.for_worker(index))
        if self._every_worker_serves:
            _tell_every_worker_serves(process)
        return process

    def _retire(self, process: Process) -> None:
        """Kill `process` if it still runs (hung), wait for it, then hand it to `_orphans` or close its descriptors.

        A worker whose status was lost with its fork server may still run, orphaned: `_orphans` tells it to
        drain and reaps it (multiprocessing would not signal it). Any other is done with: `release`.
        """
        if process.exitcode is None:
            process.process.kill()
        process.process.join()
        if process.exitcode == LOST_STATUS:
            self._orphans.adopt(process)
        else:
            release(process)

    def _start_or_stop(self, index: int) -> Process | None:
        """Start worker `index` (or its replacement); None, with the supervisor stopping, when it cannot be started.

        Out of descriptors or memory, or a fork server that cannot fork: the error must not leave `run`, which
        would skip draining the workers that serve and leave SIGTERM unheard (uvicorn's handlers only queue it).
        """
        try:
            return self._start(index)
        except OSError as exc:
            self._cannot_start(exc)
            return None

    def _cannot_start(self, exc: BaseException) -> None:
        """Stop the instance (draining the workers that serve): a worker's process cannot be started."""
        log.error("cannot start another worker: stopping", error=str(exc) or repr(exc))
        self.failure = STARTUP_FAILURE
        self.should_exit.set()

    def _start_the_others(self) -> None:
        """Start workers 1 to `WEB_CONCURRENCY` - 1, stopping at the first that cannot be started."""
        for index in range(1, self.processes_num):
            process = self._start_or_stop(index)
            if process is None:
                return
            self.processes.append(process)

    def _until_first_serves(self) -> bool:
        """Wait (handling signals) until the first worker serves; False when it failed to start or a signal came first.

        One health ping at a time: uvicorn's `wait_until_ready` pings every tick while the worker is
        still importing, and the worker then answers every queued ping in turn, so the parent read
        stale "not started" answers for seconds after the worker served. A first worker that stops
        answering or does not serve within `WORKER_START_ALLOWANCE_S` is replaced, as any other
        (`worker_health`), and so is one whose status was lost with its fork server; one that exits
        stops the start with its status.
        """
        process, health = self.processes[0], WorkerHealth.starting(self._clock.tick())
        while not self.should_exit.is_set():
            self.handle_signals()
            now = self._clock.tick()
            if not process.process.is_alive():
                successor = self._first_exited(process)
                if successor is None:
                    return False
                process, health = successor, WorkerHealth.starting(now)
                continue
            failure = health.failure(now, self.config.timeout_worker_healthcheck)
            if failure is not None:
                replaced = self._replace_first(process, failure, now)
                if replaced is None:
                    return False
                process, health = replaced
                continue
            if not health.pinged:
                process.parent_conn.send(b"ping")
                health.pinged = True
            if process.parent_conn.poll(SIGNAL_TICK_S):
                health.answered(now, serving=bool(process.parent_conn.recv()))
                if health.serving:
                    self._health[id(process)] = health
                    return True
                time.sleep(SIGNAL_TICK_S)
        return False

    def _first_exited(self, process: Process) -> Process | None:
        """The first worker exited before it served: stop the start, with its status if it says why (None).

        A worker whose status was lost with its fork server did nothing wrong, and may run on, orphaned: it
        is handed to `_orphans` and another first worker is started (the successor), as later workers are.
        """
        self._retire(process)
        status = process.exitcode
        if status == LOST_STATUS:
            log.warning("a worker died: starting another", pid=process.pid, exit_status=status)
            successor = self._start_or_stop(0)
            if successor is not None:
                self.processes[0] = successor
            return successor
        self.failure = status if status in (CONFIG_ERROR_STATUS, STARTUP_FAILURE) else STARTUP_FAILURE
        log.error("the first worker could not start: stopping", pid=process.pid, exit_status=status)
        self.should_exit.set()
        return None

    def _replace_first(self, process: Process, failure: str, now: float) -> tuple[Process, WorkerHealth] | None:
        """Kill the first worker, hung or not serving in time (`failure` says which), and start another (or None)."""
        log.warning(failure, pid=process.pid)
        self._retire(process)
        successor = self._start_or_stop(0)
        if successor is None:
            return None
        self.processes[0] = successor
        return successor, WorkerHealth.starting(now)

    def keep_subprocess_alive(self) -> None:
        """Replace a dead or hung worker, unless it could not start: then stop, keeping its status.

        Never blocks: each tick reads the answers that came and sends one ping per worker that has
        none outstanding (uvicorn waits up to 5 s for each answer, and meanwhile does not look at
        signals: a worker still importing under load delayed the SIGTERM relay by those 5 s), and a
        replacement's process starts on a thread (`worker_starts`: a fork server that died is started
        again by that start, which waits for its imports). A
        worker is replaced when it has not answered for `timeout_worker_healthcheck` seconds
        (`WORKER_HUNG_AFTER_S`) or does not serve within `WORKER_START_ALLOWANCE_S` of its start
        (`worker_health`), counted on the supervisor's own clock.
        """
        if self.should_exit.is_set():
            return
        now = self._clock.tick()
        self._orphans.tend()
        for index, process in enumerate(self.processes):
            if index in self._starts:
                if not self._settle_start(index, now):
                    return
                continue
            health = self._health.setdefault(id(process), WorkerHealth.starting(now))
            if process.process.is_alive():
                self._exchange_pings(process, health, now)
                failure = health.failure(now, self.config.timeout_worker_healthcheck)
                if failure is None:
                    continue
                log.warning(failure, pid=process.pid)
            self._health.pop(id(process), None)
            if not self._replace(index, process, now):
                return
        self._mark_ready_when_all_serve()

    def _replace(self, index: int, process: Process, now: float) -> bool:
        """Retire worker `index` (dead or hung) and start its successor; False when the supervisor stops instead."""
        self._retire(process)
        if process.exitcode in (CONFIG_ERROR_STATUS, STARTUP_FAILURE):
            log.error("a worker could not start: stopping", pid=process.pid, exit_status=process.exitcode)
            self.failure = process.exitcode
            self.should_exit.set()
            return False
        log.warning("a worker died: starting another", pid=process.pid, exit_status=process.exitcode)
        try:
            successor = self._new_worker(index)
            self._starts.begin(index, successor, now)
        except (OSError, RuntimeError) as exc:  # out of descriptors, memory or threads: the dead one stays in place
            self._cannot_start(exc)
            return False
        self.processes[index] = successor
        return True

    def _settle_start(self, index: int, now: float) -> bool:
        """Look at worker `index`'s start under way; False when it failed (the supervisor then stops)."""
        try:
            self._starts.settled(index, now)
        except BaseException as exc:  # the start's own error (out of descriptors or memory), or TimeoutError
            self._cannot_start(exc)
            return False
        return True

    def _mark_ready_when_all_serve(self) -> None:
        """Once every worker has said it serves, tell the workers (their `/ready` turns 200), once."""
        if self._every_worker_serves or len(self.processes) < self.processes_num:
            return
        healths = [self._health.get(id(process)) for process in self.processes]
        if all(health is not None and health.serving for health in healths):
            self._every_worker_serves = True
            for process in self.processes:
                _tell_every_worker_serves(process)
            log.info("every worker serves: the instance is ready", workers=self.processes_num)

    @staticmethod
    def _exchange_pings(process: Process, health: WorkerHealth, now: float) -> None:
        """Read the worker's answers so far, then ping it if no ping is outstanding."""
        connection = process.parent_conn
        try:
            while connection.poll(0):
                health.answered(now, serving=bool(connection.recv()))
            if not health.pinged:
                connection.send(b"ping")
                health.pinged = True
        except (OSError, EOFError, pickle.UnpicklingError):  # the worker is going away: the next tick sees it dead
            pass


def _tell_every_worker_serves(process: Process) -> None:
    """Send the notice down the worker's health pipe: no file system is involved.

    A worker that died meanwhile has no use for it: its replacement is told as it is made.
    """
    with contextlib.suppress(OSError):
        process.parent_conn.send(EVERY_WORKER_SERVES)


def _remove_multiprocessing_temp_dir() -> None:
    """Remove multiprocessing's directory (the fork server's socket), if it made one.

    Its own clean-up runs at interpreter exit, which the service skips (`drain.exit_now`). Asking for the
    directory with `multiprocessing.util.get_temp_dir` would create one, and raise where there is no writable
    temporary directory (the workers were spawned instead): only one already made is looked up.
    """
    directory = multiprocessing.process.current_process()._config.get("tempdir")  # type: ignore[attr-defined]
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


def supervise(config: uvicorn.Config) -> int:
    """Several workers: run the supervisor until SIGTERM; the exit status.

    The first worker's socket is bound here, so an address that cannot be bound stops the start at once
    (uvicorn's start-up failure status, as with one worker); the others are bound as their workers start.
    """
    sockets = WorkerSockets(config)
    try:
        sockets.for_worker(0)
    except OSError as exc:
        log.error("cannot listen", host=config.host, port=config.port, error=str(exc))
        return STARTUP_FAILURE
    log.info(
        "listening", host=config.host, port=sockets.bound[0].getsockname()[1], socket_per_worker=sockets.per_worker
    )
    if not become_subreaper():
        log.info("not the reaper of orphaned workers: one whose fork server dies stops when its health pipe closes")
    supervisor = Supervisor(config, sockets)
    supervisor.run()
    return supervisor.failure or 0
