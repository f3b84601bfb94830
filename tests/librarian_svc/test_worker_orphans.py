"""Orphaned workers (`librarian_svc/worker_orphans.py`): told to drain and reaped when they are the supervisor's
children, released when they are not, killed when they outlive the shutdown.

The orphans here are real processes, children of the test (as an orphaned worker is of its subreaper
supervisor); the process objects around them are stand-ins that record what was closed. The live case (a
killed fork server) is in test_workers.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs
from uvicorn.supervisors.multiprocess import Process

from librarian_svc import worker_orphans
from librarian_svc.worker_orphans import LOST_STATUS, OrphanedWorkers

SLEEPER = "import signal, sys, time; {setup}; print('ready', flush=True); time.sleep(60)"


class _Closable:
    """A pipe's end, or the process object whose status pipe (`_popen`) `release` closes."""

    def __init__(self) -> None:
        self.closed = False
        self._popen = self

    def close(self) -> None:
        self.closed = True

    def poll(self) -> int:
        return LOST_STATUS


class _LostWorker:
    """What the supervisor holds of a worker whose fork server died: a pid, a lost status, pipes to close."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exitcode = LOST_STATUS
        self.parent_conn, self.child_conn, self.process = _Closable(), _Closable(), _Closable()


def released(worker: _LostWorker) -> bool:
    """Its health pipe and its process object were closed (a function: mypy narrows a property it saw asserted)."""
    return worker.parent_conn.closed and worker.child_conn.closed and worker.process.closed


def as_process(worker: _LostWorker) -> Process:
    process: object = worker
    return process  # type: ignore[return-value]


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        if child.poll() is None:  # a child the test reaped reads as ended (ECHILD)
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


def start_child(children: list[subprocess.Popen[bytes]], setup: str = "pass") -> int:
    child = subprocess.Popen([sys.executable, "-c", SLEEPER.format(setup=setup)], stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline() == b"ready\n"  # its handlers are in place
    children.append(child)
    return child.pid


def tend_until_empty(orphans: OrphanedWorkers, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while orphans and time.monotonic() < deadline:
        orphans.tend()
        time.sleep(0.02)


def test_a_running_orphan_that_is_a_child_is_told_to_drain_once_and_reaped(
    children: list[subprocess.Popen[bytes]],
) -> None:
    worker = _LostWorker(start_child(children))
    orphans = OrphanedWorkers()
    orphans.adopt(as_process(worker))
    orphans.adopt(as_process(worker))  # the same worker seen lost twice (a tick, then the shutdown) is one orphan
    assert len(orphans) == 1
    with capture_logs() as logs:
        tend_until_empty(orphans)  # well within the adoption window: a child needs none
    assert len(orphans) == 0
    assert released(worker)
    assert [(line["event"], line["pid"]) for line in logs] == [
        ("a worker outlived its fork server: draining it", worker.pid),
        ("an orphaned worker exited", worker.pid),
    ]
    assert logs[1]["exit_status"] == -signal.SIGTERM
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(worker.pid, os.WNOHANG)


def test_a_process_that_is_not_a_child_is_waited_for_then_released_and_never_signalled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = _LostWorker(os.getppid())  # running, and not this process's child: it cannot be waited for
    orphans = OrphanedWorkers()
    orphans.adopt(as_process(worker))
    orphans.tend()  # within the window: the kernel may not have reparented it yet
    assert len(orphans) == 1
    assert not released(worker)
    monkeypatch.setattr(worker_orphans, "ADOPTION_WINDOW_S", 0.0)  # the window is over
    orphans.tend()
    assert len(orphans) == 0
    assert released(worker)  # its pipe closed: if it runs, it stops on its own
    assert os.getppid() == worker.pid  # not signalled


def test_at_shutdown_an_orphan_that_does_not_drain_in_time_is_killed(
    children: list[subprocess.Popen[bytes]],
) -> None:
    deaf = _LostWorker(start_child(children, setup="signal.signal(signal.SIGTERM, signal.SIG_IGN)"))
    obedient = _LostWorker(start_child(children))
    orphans = OrphanedWorkers()
    for worker in (deaf, obedient):
        orphans.adopt(as_process(worker))
    started = time.monotonic()
    with capture_logs() as logs:
        orphans.stop(deadline=started + 1.0)
    assert 1.0 <= time.monotonic() - started < 5.0
    assert len(orphans) == 0
    assert released(deaf)
    assert released(obedient)
    statuses = {line["pid"]: line["exit_status"] for line in logs if line["event"] == "an orphaned worker exited"}
    assert statuses == {obedient.pid: -signal.SIGTERM, deaf.pid: -signal.SIGKILL}
    killed = [line["pid"] for line in logs if line["event"] == "an orphaned worker did not stop in time: killing it"]
    assert killed == [deaf.pid]
    for worker in (deaf, obedient):
        with pytest.raises(ChildProcessError):
            os.waitpid(worker.pid, os.WNOHANG)


def test_a_shutdown_whose_deadline_has_passed_still_tells_kills_and_releases_each_orphan_once(
    children: list[subprocess.Popen[bytes]],
) -> None:
    """The workers' own joins may use up the deadline: the orphans are still seen to, and nothing raises."""
    deaf = _LostWorker(start_child(children, setup="signal.signal(signal.SIGTERM, signal.SIG_IGN)"))
    stranger = _LostWorker(os.getppid())
    orphans = OrphanedWorkers()
    for worker in (deaf, stranger):
        orphans.adopt(as_process(worker))
    with capture_logs() as logs:
        orphans.stop(deadline=time.monotonic() - 1.0)
    assert len(orphans) == 0
    assert released(deaf)
    assert released(stranger)  # not a child: released, never signalled
    assert os.getppid() == stranger.pid
    events = [(line["event"], line["pid"]) for line in logs]
    assert events == [
        ("a worker outlived its fork server: draining it", deaf.pid),
        ("an orphaned worker did not stop in time: killing it", deaf.pid),
        ("an orphaned worker exited", deaf.pid),
    ]
