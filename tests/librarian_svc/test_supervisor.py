"""The supervisor's error paths, in-process: a worker that cannot be started stops the instance, draining;
a worker that outlives the drain is killed rather than waited for.

An `OSError` from starting a worker (out of descriptors or memory, a fork server that cannot fork) once
escaped `Supervisor.run`: the workers that served were never told to drain, and SIGTERM went unheard
(uvicorn's handlers only queue it). Here the supervisor is built for real (its sockets, its marker) and
its workers are stand-ins, so no process starts.

The supervisor also tells its workers, down their health pipes, once every one serves
(`instance_readiness`), with no temporary directory needed: a read-only root file system used to stop
it with a traceback before its first worker started.
"""

from __future__ import annotations

import multiprocessing.process
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from uvicorn.config import STARTUP_FAILURE

from librarian_svc.instance_readiness import EVERY_WORKER_SERVES
from librarian_svc.worker_health import WorkerHealth
from librarian_svc.worker_orphans import LOST_STATUS
from librarian_svc.worker_sockets import WorkerSockets
from librarian_svc.workers import STRAGGLER_MARGIN_S, SUPERVISOR_FAILURE, Supervisor


class _DeadWorker:
    """What the supervisor reads of a worker that died (here: killed by a signal)."""

    def __init__(self) -> None:
        self.pid: int | None = 4_000_000
        self.exitcode: int | None = -9
        self.process = self
        self._popen = self  # multiprocessing's handle on the process, which `release` closes
        self.parent_conn = self.child_conn = self
        self.killed = False
        self.terminated = 0
        self.closed = 0
        self.sent: list[object] = []
        """What the supervisor sent down its health pipe."""
        """How many of its three holders of descriptors were closed: the status pipe and the health pipe's ends."""

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        pass

    def kill(self) -> None:
        self.killed = True

    def close(self) -> None:
        self.closed += 1

    def poll(self, timeout: float = 0.0) -> int | None:
        return self.exitcode

    def send(self, message: object) -> None:
        self.sent.append(message)

    def terminate(self) -> None:
        self.terminated += 1


class _Starts(_DeadWorker):
    """A worker that starts (and would serve)."""

    def __init__(self, *_: Any) -> None:
        super().__init__()
        self.exitcode = None

    def start(self) -> None:
        pass

    def is_alive(self) -> bool:
        return True


class _CannotStart:
    """A worker whose process cannot be started: the fork or the fork server fails."""

    def __init__(self, *_: Any) -> None:
        raise OSError(24, "Too many open files")


@pytest.fixture(name="supervisor")
def supervisor_fixture() -> Iterator[Supervisor]:
    config = uvicorn.Config("librarian_svc.workers:create_worker_app", host="127.0.0.1", port=0, workers=2)
    sockets = WorkerSockets(config, per_worker=True)
    supervisor = Supervisor(config, sockets)
    supervisor.process_type = _CannotStart  # type: ignore[assignment]
    yield supervisor
    for sock in sockets.bound:
        sock.close()


def test_a_dead_worker_that_cannot_be_replaced_stops_the_supervisor_instead_of_raising(
    supervisor: Supervisor, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = _DeadWorker()
    supervisor.processes = [dead, _DeadWorker()]  # type: ignore[list-item]
    supervisor.keep_subprocess_alive()  # raised OSError before
    assert supervisor.should_exit.is_set()
    assert supervisor.failure == STARTUP_FAILURE
    kept: object = supervisor.processes[0]
    assert kept is dead  # kept, to be joined at shutdown
    assert "cannot start another worker: stopping" in capsys.readouterr().out


def test_a_first_worker_that_cannot_be_replaced_stops_the_start(supervisor: Supervisor) -> None:
    hung = _DeadWorker()
    hung.exitcode = None  # it runs, and has stopped answering
    supervisor.processes = [hung]  # type: ignore[list-item]
    assert supervisor._replace_first(hung, "a worker stopped answering: replacing it", 0.0) is None  # type: ignore[arg-type]
    assert hung.killed
    assert supervisor.should_exit.is_set()
    assert supervisor.failure == STARTUP_FAILURE


def test_a_replaced_worker_closes_its_descriptors_at_once(supervisor: Supervisor) -> None:
    """The process object and its target form a cycle: left to the collector, each replacement kept two open."""
    dead = _DeadWorker()
    supervisor.process_type = _Starts  # type: ignore[assignment]
    supervisor.processes = [dead]  # type: ignore[list-item]
    supervisor.keep_subprocess_alive()
    successor: object = supervisor.processes[0]
    assert isinstance(successor, _Starts)
    assert dead.closed == 3


def test_a_worker_whose_status_was_lost_with_its_fork_server_is_adopted_not_killed(supervisor: Supervisor) -> None:
    lost = _DeadWorker()
    lost.exitcode = LOST_STATUS
    supervisor.process_type = _Starts  # type: ignore[assignment]
    supervisor.processes = [lost]  # type: ignore[list-item]
    supervisor.keep_subprocess_alive()
    successor: object = supervisor.processes[0]
    assert isinstance(successor, _Starts)
    assert not lost.killed  # multiprocessing would not signal it anyway: its status is known
    assert lost.closed == 0  # its health pipe stays open until it is told to drain (`worker_orphans`)
    assert len(supervisor._orphans) == 1


class _SlowToStart(_Starts):
    """A replacement whose start waits (a fork server that died is importing again), until released."""

    def __init__(self, *_: Any) -> None:
        super().__init__()
        self.release = threading.Event()

    def start(self) -> None:
        self.release.wait(timeout=30)

    def is_alive(self) -> bool:
        return self.terminated == 0


def test_a_replacement_slow_to_start_holds_neither_the_supervisor_nor_its_shutdown(supervisor: Supervisor) -> None:
    supervisor.process_type = _SlowToStart  # type: ignore[assignment]
    supervisor.processes = [_DeadWorker()]  # type: ignore[list-item]
    began = time.monotonic()
    supervisor.keep_subprocess_alive()
    supervisor.keep_subprocess_alive()
    assert time.monotonic() - began < 1.0  # the start waits on its thread
    successor: object = supervisor.processes[0]
    assert isinstance(successor, _SlowToStart)
    assert not successor.killed
    supervisor.terminate_all()  # SIGTERM while it starts: not signalled yet (it may not exist yet)
    assert successor.terminated == 0
    successor.release.set()
    supervisor._stop_workers()  # told to drain once started, then joined
    assert successor.terminated == 1
    assert not successor.killed


class _FailsToStart(_Starts):
    """A replacement whose process cannot be started (the fork fails: out of memory)."""

    def start(self) -> None:
        self.pid = None  # as multiprocessing's process has no pid until its start succeeds
        raise OSError(12, "Cannot allocate memory")


def test_a_replacement_whose_start_fails_on_its_thread_stops_the_supervisor(
    supervisor: Supervisor, capsys: pytest.CaptureFixture[str]
) -> None:
    supervisor.process_type = _FailsToStart  # type: ignore[assignment]
    supervisor.processes = [_DeadWorker()]  # type: ignore[list-item]
    deadline = time.monotonic() + 5.0
    while not supervisor.should_exit.is_set() and time.monotonic() < deadline:
        supervisor.keep_subprocess_alive()
        time.sleep(0.01)
    assert supervisor.failure == STARTUP_FAILURE
    assert "cannot start another worker: stopping" in capsys.readouterr().out
    supervisor.terminate_all()
    supervisor.join_all()  # a process that never started is neither signalled nor waited for
    failed: object = supervisor.processes[0]
    assert isinstance(failed, _FailsToStart)
    assert failed.terminated == 0


def test_a_replacement_for_which_no_thread_can_be_started_stops_the_supervisor(
    supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Out of memory or of the cgroup's pids, a thread fails as a fork would: stop, draining, as for a fork."""

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    dead = _DeadWorker()
    supervisor.process_type = _Starts  # type: ignore[assignment]
    supervisor.processes = [dead]  # type: ignore[list-item]
    supervisor.keep_subprocess_alive()
    assert supervisor.should_exit.is_set()
    assert supervisor.failure == STARTUP_FAILURE
    kept: object = supervisor.processes[0]
    assert kept is dead
    assert 0 not in supervisor._starts
    assert "cannot start another worker: stopping" in capsys.readouterr().out


def test_a_bug_in_a_tick_stops_the_instance_draining_instead_of_leaving_run(
    supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bug() -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(supervisor, "keep_subprocess_alive", bug)
    supervisor._tick()
    assert supervisor.should_exit.is_set()
    assert supervisor.failure == SUPERVISOR_FAILURE
    out = capsys.readouterr().out
    assert "supervising the workers failed: stopping" in out
    assert "KeyError" in out  # with its traceback


@pytest.mark.parametrize(("status", "replaced"), [(LOST_STATUS, True), (2, False), (-9, False)])
def test_a_first_worker_lost_with_its_fork_server_is_replaced_and_any_other_exit_stops_the_start(
    supervisor: Supervisor, status: int, replaced: bool
) -> None:
    first = _DeadWorker()
    first.exitcode = status
    supervisor.process_type = _Starts  # type: ignore[assignment]
    supervisor.processes = [first]  # type: ignore[list-item]
    successor: object = supervisor._first_exited(first)  # type: ignore[arg-type]
    assert (successor is not None) == replaced
    assert supervisor.should_exit.is_set() != replaced
    if replaced:
        assert supervisor.processes[0] is successor
        assert len(supervisor._orphans) == 1
    else:
        assert supervisor.failure == (2 if status == 2 else STARTUP_FAILURE)


def test_at_shutdown_each_worker_is_told_once_and_one_lost_since_the_last_tick_is_adopted(
    supervisor: Supervisor,
) -> None:
    serving, lost = _Straggler(), _DeadWorker()
    lost.exitcode = LOST_STATUS
    supervisor.processes = [serving, lost]  # type: ignore[list-item]
    supervisor.terminate_all()
    assert serving.terminated == 1
    assert lost.terminated == 0
    assert len(supervisor._orphans) == 1
    serving.killed = True  # it exits: the join returns
    serving.exitcode = -15
    supervisor.join_all()
    assert serving.terminated == 1  # not told twice (uvicorn ends a worker at once on a second SIGINT)


def test_a_worker_whose_start_returned_after_the_shutdown_began_is_told_before_it_is_waited_for(
    supervisor: Supervisor,
) -> None:
    late = _Straggler()
    late.pid = None  # its start has not returned when the workers are told
    supervisor.processes = [late]  # type: ignore[list-item]
    supervisor.terminate_all()
    assert late.terminated == 0
    late.pid = 4_000_001  # it has started since
    supervisor.join_all()
    assert late.terminated == 1


class _Straggler(_DeadWorker):
    """A worker that does not exit when told to drain (its start hangs), until SIGKILL."""

    def __init__(self) -> None:
        super().__init__()
        self.exitcode = None
        self.waited: list[float | None] = []

    def is_alive(self) -> bool:
        return not self.killed

    def join(self, timeout: float | None = None) -> None:
        self.waited.append(timeout)


def test_shutdown_kills_a_worker_that_outlives_the_drain_instead_of_waiting_for_ever(
    supervisor: Supervisor, capsys: pytest.CaptureFixture[str]
) -> None:
    straggler, done = _Straggler(), _DeadWorker()
    supervisor.processes = [straggler, done]  # type: ignore[list-item]
    supervisor.join_all()
    assert straggler.killed
    assert not done.killed
    first_wait = straggler.waited[0]
    assert first_wait is not None
    assert first_wait <= (supervisor.config.timeout_graceful_shutdown or 0) + STRAGGLER_MARGIN_S
    assert "a worker did not stop in time: killing it" in capsys.readouterr().out


def test_a_first_worker_that_cannot_be_started_stops_the_start_with_its_status(
    supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `run` removes multiprocessing's temporary directory as it ends: a directory of this test's, not the suite's
    monkeypatch.setitem(_multiprocessing_config(), "tempdir", str(tmp_path / "multiprocessing"))
    supervisor.run()  # raised OSError before
    assert supervisor.failure == STARTUP_FAILURE
    assert supervisor.processes == []


def _multiprocessing_config() -> dict[str, Any]:
    """multiprocessing's per-process settings, where it keeps the temporary directory it made (if any)."""
    config: dict[str, Any] = multiprocessing.process.current_process()._config  # type: ignore[attr-defined]
    return config


def _serving(supervisor: Supervisor, *workers: _DeadWorker) -> None:
    """`workers` are the supervisor's, each having answered its last ping as serving."""
    supervisor.processes = list(workers)  # type: ignore[arg-type]
    for worker in workers:
        health = WorkerHealth.starting(0.0)
        health.answered(0.0, serving=True)
        supervisor._health[id(worker)] = health


def test_every_worker_is_told_once_when_all_serve_and_a_later_replacement_as_it_is_made(
    supervisor: Supervisor,
) -> None:
    supervisor.process_type = _Starts  # type: ignore[assignment]
    before: object = supervisor._new_worker(0)
    assert isinstance(before, _Starts)
    assert before.sent == []  # not ready yet: nothing in its pipe
    first, second = _Starts(), _Starts()
    _serving(supervisor, first)
    supervisor._mark_ready_when_all_serve()
    assert first.sent == []  # the second has not served yet
    _serving(supervisor, first, second)
    supervisor._mark_ready_when_all_serve()
    supervisor._mark_ready_when_all_serve()
    assert first.sent == second.sent == [EVERY_WORKER_SERVES]  # told once
    replacement: object = supervisor._new_worker(1)
    assert isinstance(replacement, _Starts)
    assert replacement.sent == [EVERY_WORKER_SERVES]  # the instance does not become unready again


class _PipeGone(_Starts):
    """A worker that died just before it was told: its health pipe is closed."""

    def send(self, message: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_worker_gone_when_the_instance_becomes_ready_does_not_stop_the_supervisor(supervisor: Supervisor) -> None:
    gone, serving = _PipeGone(), _Starts()
    _serving(supervisor, gone, serving)
    supervisor._mark_ready_when_all_serve()  # its replacement is told as it is made
    assert serving.sent == [EVERY_WORKER_SERVES]
    assert not supervisor.should_exit.is_set()


def _no_usable_temporary_directory() -> str:
    raise FileNotFoundError(2, "No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', '/']")


def test_the_supervisor_starts_and_stops_with_no_writable_temporary_directory(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only root file system (`docker run --read-only`): the supervisor made a temporary directory for
    its readiness marker, and `FileNotFoundError` ended the process with a traceback before any worker started."""
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_get_default_tempdir", _no_usable_temporary_directory)
    monkeypatch.delitem(_multiprocessing_config(), "tempdir", raising=False)  # none made: the fork server never ran
    with pytest.raises(FileNotFoundError):
        tempfile.mkdtemp()  # as on a read-only root file system
    config = uvicorn.Config("librarian_svc.workers:create_worker_app", host="127.0.0.1", port=0, workers=2)
    sockets = WorkerSockets(config, per_worker=True)
    try:
        supervisor = Supervisor(config, sockets)  # raised FileNotFoundError before
        supervisor.process_type = _CannotStart  # type: ignore[assignment]
        supervisor.run()  # and its clean-up asked multiprocessing for a temporary directory, making one
    finally:
        for sock in sockets.bound:
            sock.close()
    assert supervisor.failure == STARTUP_FAILURE
    assert "workers stopped" in capsys.readouterr().out
