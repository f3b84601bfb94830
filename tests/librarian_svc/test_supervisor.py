"""The supervisor's error paths, in-process: a worker that cannot be started stops the instance, draining;
a worker that outlives the drain is killed rather than waited for.

An `OSError` from starting a worker (out of descriptors or memory, a fork server that cannot fork) once
escaped `Supervisor.run`: the workers that served were never told to drain, and SIGTERM went unheard
(uvicorn's handlers only queue it). Here the supervisor is built for real (its sockets, its marker) and
its workers are stand-ins, so no process starts.
"""

from __future__ import annotations

import multiprocessing.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from uvicorn.config import STARTUP_FAILURE

from librarian_svc.instance_readiness import MARKER_ENV
from librarian_svc.worker_sockets import WorkerSockets
from librarian_svc.workers import STRAGGLER_MARGIN_S, Supervisor


class _DeadWorker:
    """What the supervisor reads of a worker that died (here: killed by a signal)."""

    def __init__(self) -> None:
        self.pid = 4_000_000
        self.exitcode = -9
        self.process = self
        self.killed = False

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        pass

    def kill(self) -> None:
        self.killed = True


class _CannotStart:
    """A worker whose process cannot be started: the fork or the fork server fails."""

    def __init__(self, *_: Any) -> None:
        raise OSError(24, "Too many open files")


@pytest.fixture(name="supervisor")
def supervisor_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Supervisor]:
    monkeypatch.delenv(MARKER_ENV, raising=False)  # the supervisor sets it for its workers: restored after
    config = uvicorn.Config("librarian_svc.workers:create_worker_app", host="127.0.0.1", port=0, workers=2)
    sockets = WorkerSockets(config, per_worker=True)
    supervisor = Supervisor(config, sockets)
    supervisor.process_type = _CannotStart  # type: ignore[assignment]
    yield supervisor
    for sock in sockets.bound:
        sock.close()
    supervisor._serving_marker.remove()


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
    dead = _DeadWorker()
    supervisor.processes = [dead]  # type: ignore[list-item]
    assert supervisor._replace_first(dead, "a worker stopped answering: replacing it", 0.0) is None  # type: ignore[arg-type]
    assert dead.killed
    assert supervisor.should_exit.is_set()
    assert supervisor.failure == STARTUP_FAILURE


class _Straggler(_DeadWorker):
    """A worker that does not exit when told to drain (its start hangs), until SIGKILL."""

    def __init__(self) -> None:
        super().__init__()
        self.exitcode = None  # type: ignore[assignment]
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
    monkeypatch.setattr(multiprocessing.util, "get_temp_dir", lambda: str(tmp_path / "multiprocessing"))
    supervisor.run()  # raised OSError before
    assert supervisor.failure == STARTUP_FAILURE
    assert supervisor.processes == []
