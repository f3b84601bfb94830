"""Replacement starts off the supervisor's loop (`librarian_svc/worker_starts.py`): looked at, never waited on.

The processes are stand-ins whose `start()` blocks, fails or returns as each case needs: a fork server
that died makes the next start wait for its imports, and an import that hangs made it wait for ever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from uvicorn.supervisors.multiprocess import Process

from librarian_svc.worker_health import WORKER_START_ALLOWANCE_S
from librarian_svc.worker_starts import WorkerStarts


class _Blocked:
    """A process whose start waits until released, then raises `error` if there is one."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.process = self  # uvicorn's worker holds its multiprocessing process here
        self.release = threading.Event()
        self.error = error
        self.started = False
        self.entered = threading.Event()
        self.returned = threading.Event()

    def start(self) -> None:
        self.entered.set()
        try:
            self.release.wait(timeout=30)
            if self.error is not None:
                raise self.error
            self.started = True
        finally:
            self.returned.set()


def as_process(stand_in: _Blocked) -> Process:
    process: object = stand_in
    return process  # type: ignore[return-value]


def settle(starts: WorkerStarts, index: int, now: float = 0.0, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not starts.settled(index, now):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def blocked() -> Iterator[list[_Blocked]]:
    made: list[_Blocked] = []
    yield made
    for stand_in in made:  # no thread left waiting after the test
        stand_in.release.set()


def test_a_start_runs_off_the_caller_and_is_seen_once_it_returns(blocked: list[_Blocked]) -> None:
    starts, stand_in = WorkerStarts(), _Blocked()
    blocked.append(stand_in)
    began = time.monotonic()
    starts.begin(0, as_process(stand_in), now=0.0)
    assert time.monotonic() - began < 1.0
    assert 0 in starts
    assert not starts.settled(0, now=1.0)
    stand_in.release.set()
    assert settle(starts, 0)
    assert stand_in.started
    assert 0 not in starts


@pytest.mark.parametrize("error", [OSError(24, "Too many open files"), EOFError()])
def test_what_a_start_raised_is_raised_to_the_supervisor(error: BaseException, blocked: list[_Blocked]) -> None:
    starts, stand_in = WorkerStarts(), _Blocked(error)
    blocked.append(stand_in)
    starts.begin(1, as_process(stand_in), now=0.0)
    stand_in.release.set()
    with pytest.raises(type(error)):
        settle(starts, 1)
    assert 1 not in starts


def test_a_start_that_does_not_return_within_the_allowance_times_out(blocked: list[_Blocked]) -> None:
    starts, stand_in = WorkerStarts(), _Blocked()
    blocked.append(stand_in)
    starts.begin(0, as_process(stand_in), now=10.0)
    assert not starts.settled(0, now=10.0 + WORKER_START_ALLOWANCE_S - 1)
    with pytest.raises(TimeoutError):
        starts.settled(0, now=10.0 + WORKER_START_ALLOWANCE_S)


def test_at_shutdown_the_started_are_returned_and_a_hung_start_is_left_at_the_deadline(blocked: list[_Blocked]) -> None:
    starts = WorkerStarts()
    quick, failing, hung = _Blocked(), _Blocked(OSError("no memory")), _Blocked()
    blocked.extend([quick, failing, hung])
    for index, stand_in in enumerate((quick, failing)):  # one start at a time: these before the one that hangs
        stand_in.release.set()
        starts.begin(index, as_process(stand_in), now=0.0)
        assert stand_in.returned.wait(5.0)
    starts.begin(2, as_process(hung), now=0.0)
    began = time.monotonic()
    finished: list[object] = list(starts.finish(deadline=began + 1.0))
    assert 1.0 <= time.monotonic() - began < 3.0
    assert finished == [quick]
    assert not any(index in starts for index in range(3))


def test_at_shutdown_a_start_still_waiting_its_turn_is_not_begun(blocked: list[_Blocked]) -> None:
    """The sockets are closed after `finish`: a start begun then would pickle closed sockets."""
    starts, hung, waiting = WorkerStarts(), _Blocked(), _Blocked()
    blocked.extend([hung, waiting])
    starts.begin(0, as_process(hung), now=0.0)
    assert hung.entered.wait(5.0)  # the hung one holds the turn
    starts.begin(1, as_process(waiting), now=0.0)
    waiting.release.set()
    finished = starts.finish(deadline=time.monotonic() + 0.5)
    assert finished == []
    hung.release.set()
    assert hung.returned.wait(5.0)
    for its_thread in [thread for thread in threading.enumerate() if thread.name == "worker-start-1"]:
        its_thread.join(5.0)  # it takes its turn now, and gives it up
        assert not its_thread.is_alive()
    assert not waiting.returned.is_set()
