"""The worker's health answer (`librarian_svc/worker_process.py`): from the event loop once the worker serves.

Driven in one process: the test plays the supervisor's end of the pipe, and a loop running in a thread
plays the worker's event loop. The live check (a worker whose loop is stuck is replaced, one that stalls
for less than the limit is not) is in test_workers.py.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.forkserver
import os
import threading
from collections.abc import Iterator
from multiprocessing.context import ForkServerProcess, SpawnProcess

import pytest
import uvicorn
from uvicorn.supervisors.multiprocess import Process

from librarian_svc import instance_readiness, worker_process
from librarian_svc.worker_process import LoopAnsweringProcess, release, start_unpolled

ANSWER_WAIT_S = 2.0
"""Ample for an answer that is due at once; the tests that expect none wait much less."""


@pytest.fixture
def process() -> Iterator[LoopAnsweringProcess]:
    config = uvicorn.Config("librarian_svc.workers:create_worker_app", factory=True, workers=2)
    process = LoopAnsweringProcess(config, [])  # never started: the test calls the worker's side itself
    yield process
    process.parent_conn.close()
    process.child_conn.close()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in a thread: the worker's loop."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    runner.join(timeout=5)
    loop.close()


def ping(process: LoopAnsweringProcess) -> None:
    """The supervisor's ping, and the worker's thread reading it (`pong` returns once it answered or handed over)."""
    process.parent_conn.send(b"ping")
    process.pong()


def block(loop: asyncio.AbstractEventLoop) -> threading.Event:
    """Hold `loop` in a callback that never awaits until the returned event is set (a stuck loop)."""
    release, holding = threading.Event(), threading.Event()

    def stuck() -> None:
        holding.set()
        release.wait(timeout=30)

    loop.call_soon_threadsafe(stuck)
    assert holding.wait(timeout=5)
    return release


def test_while_starting_the_thread_answers_not_started_even_with_the_loop_busy(
    process: LoopAnsweringProcess, loop: asyncio.AbstractEventLoop
) -> None:
    """Building the app runs on the loop before it serves: that is start-up, bounded by the supervisor's allowance."""
    ping(process)  # no loop yet: the interpreter is still importing
    assert process.parent_conn.poll(ANSWER_WAIT_S)
    assert process.parent_conn.recv() is False

    process._loop = loop
    release = block(loop)
    try:
        ping(process)
        assert process.parent_conn.poll(ANSWER_WAIT_S)
        assert process.parent_conn.recv() is False
    finally:
        release.set()


def test_once_serving_the_answer_waits_for_the_event_loop(
    process: LoopAnsweringProcess, loop: asyncio.AbstractEventLoop
) -> None:
    process._loop = loop
    process.server.started = True

    ping(process)
    assert process.parent_conn.poll(ANSWER_WAIT_S)
    assert process.parent_conn.recv() is True

    release = block(loop)
    try:
        ping(process)
        assert not process.parent_conn.poll(0.5)  # uvicorn's thread would have answered by now
    finally:
        release.set()
    assert process.parent_conn.poll(ANSWER_WAIT_S)  # the loop ran again: the answer goes
    assert process.parent_conn.recv() is True


def test_a_closed_loop_leaves_the_ping_unanswered(process: LoopAnsweringProcess) -> None:
    """The worker is exiting: no answer (an answer would say it lives), and no exception in the ping thread."""
    closed = asyncio.new_event_loop()
    closed.close()
    process._loop = closed
    process.server.started = True
    ping(process)
    assert not process.parent_conn.poll(0.3)


def test_the_supervisors_notice_that_every_worker_serves_is_noted_not_answered(
    process: LoopAnsweringProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/ready` waits for it (`instance_readiness`); an answer would count as one to a ping never sent."""
    monkeypatch.setattr(instance_readiness, "_supervised", True)  # what `target` sets in a worker
    monkeypatch.setattr(instance_readiness, "_every_worker_serves", False)
    serving = instance_readiness.WorkersServing.from_environment()
    assert serving() is False
    process.parent_conn.send(instance_readiness.EVERY_WORKER_SERVES)
    process.pong()
    assert serving() is True
    assert not process.parent_conn.poll(0.3)


CONFIG = uvicorn.Config("librarian_svc.workers:create_worker_app", factory=True, workers=2)


def forked_worker_whose_fork_server_fails(
    monkeypatch: pytest.MonkeyPatch, error: BaseException, *, starting_it: bool
) -> tuple[LoopAnsweringProcess, SpawnProcess, list[object]]:
    """A worker to be forked whose fork server fails with `error`, `starting_it` or forking the worker.

    Returns the worker, its spawned fallback, and what was started.
    """
    monkeypatch.setattr(worker_process, "START_METHOD", "forkserver")
    process = LoopAnsweringProcess(CONFIG, [])
    forked: object = process.process  # uvicorn annotates it a SpawnProcess
    spawned = process._spawned
    assert isinstance(forked, ForkServerProcess)
    assert isinstance(spawned, SpawnProcess)

    def fails() -> None:
        raise error

    started: list[object] = []
    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running", fails if starting_it else lambda: None)
    monkeypatch.setattr(forked, "start", lambda: None if starting_it else fails())
    monkeypatch.setattr(spawned, "start", lambda: started.append(spawned))
    return process, spawned, started


def test_workers_start_from_the_fork_server_and_are_spawned_when_it_cannot_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No writable temporary directory for the fork server's socket (a read-only file system): spawn, as uvicorn."""
    no_tmp = FileNotFoundError("No usable temporary directory found")
    process, spawned, started = forked_worker_whose_fork_server_fails(monkeypatch, no_tmp, starting_it=True)
    process.start()
    assert started == [spawned]
    assert process.process is spawned
    assert worker_process.START_METHOD == "spawn"  # and every later worker
    assert LoopAnsweringProcess(CONFIG, [])._spawned is None

    def fails() -> None:
        raise no_tmp

    monkeypatch.setattr(spawned, "start", fails)
    with pytest.raises(FileNotFoundError):  # already spawned: nothing to fall back to
        process.start()


@pytest.mark.parametrize(
    "error",
    [EOFError(), ConnectionRefusedError(111, "Connection refused"), BrokenPipeError(32, "Broken pipe")],
    ids=["closed", "refused", "broken_pipe"],
)
def test_a_fork_server_that_dies_while_forking_costs_only_that_start(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """It died after it was found running: this worker is spawned, the next is forked from a new fork server."""
    process, spawned, started = forked_worker_whose_fork_server_fails(monkeypatch, error, starting_it=False)
    process.start()
    assert started == [spawned]
    assert process.process is spawned
    assert worker_process.START_METHOD == "forkserver"
    next_process: object = LoopAnsweringProcess(CONFIG, []).process
    assert isinstance(next_process, ForkServerProcess)


def test_a_started_worker_is_left_out_of_multiprocessing_s_children() -> None:
    """Else starting another polls it (racing the supervisor for a status that can be read once) and exit joins it."""
    stand_in = _Exits()
    start_unpolled(stand_in.as_process())
    assert stand_in.process not in multiprocessing.active_children()
    stand_in.process.join(10)
    assert stand_in.process.exitcode == 2


def test_a_released_worker_has_its_descriptors_closed_and_still_reads_as_exited() -> None:
    """The shutdown may still look at a worker released earlier (one lost with its fork server, left in its place)."""
    stand_in = _Exits()
    start_unpolled(stand_in.as_process())
    stand_in.process.join(10)
    sentinel = stand_in.process.sentinel
    release(stand_in.as_process())
    release(stand_in.as_process())  # idempotent
    with pytest.raises(OSError):  # the status pipe is closed
        os.fstat(sentinel)
    assert stand_in.parent_conn.closed
    assert stand_in.child_conn.closed
    assert stand_in.process.exitcode == 2
    assert stand_in.process.pid is not None
    assert not stand_in.process.is_alive()
    stand_in.process.join(1)


class _Exits:
    """What the supervisor holds of a worker: a multiprocessing process (here forked, exiting with status 2)."""

    def __init__(self) -> None:
        self.process = multiprocessing.get_context("fork").Process(target=os._exit, args=(2,))
        self.parent_conn, self.child_conn = multiprocessing.Pipe()

    def start(self) -> None:
        self.process.start()

    def as_process(self) -> Process:
        process: object = self
        return process  # type: ignore[return-value]
