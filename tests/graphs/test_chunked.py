"""Chunked CPU work: one generator, driven to its result with a pause (check or checkpoint) between chunks; a pacer."""

from __future__ import annotations

import asyncio

import pytest

from graphs.chunked import Chunked, Pacer, finish, finish_async


def three_chunks(log: list[str]) -> Chunked[int]:
    total = 0
    for chunk in range(3):
        total += chunk
        log.append(f"chunk {chunk}")
        yield
    log.append("closed")
    return total


def test_finish_returns_the_result_and_pauses_between_chunks() -> None:
    log: list[str] = []
    assert finish(three_chunks(log), lambda: log.append("pause")) == 3
    assert log == ["chunk 0", "pause", "chunk 1", "pause", "chunk 2", "pause", "closed"]


def test_finish_async_awaits_the_checkpoint_between_chunks() -> None:
    log: list[str] = []

    async def checkpoint() -> None:
        log.append("checkpoint")

    assert asyncio.run(finish_async(three_chunks(log), checkpoint)) == 3
    assert log.count("checkpoint") == 3


def test_a_pause_that_raises_stops_the_work_there() -> None:
    log: list[str] = []

    def stop() -> None:
        raise TimeoutError

    with pytest.raises(TimeoutError):
        finish(three_chunks(log), stop)
    assert log == ["chunk 0"]


def test_the_pacer_awaits_the_checkpoint_once_per_chunk_of_units() -> None:
    done_at_checkpoint: list[int] = []

    async def checkpoint() -> None:
        done_at_checkpoint.append(pacer.done)

    pacer = Pacer(checkpoint, every=10)

    async def work() -> None:
        for size in [3, 3, 3, 3, 25, 1, 9, 2]:
            await pacer.tick(size)

    asyncio.run(work())
    assert done_at_checkpoint == [12, 37, 47]  # one pause per chunk's worth, however large one step is


def test_a_pacer_without_a_checkpoint_only_counts() -> None:
    pacer = Pacer(None, every=1)
    asyncio.run(pacer.tick(5))
    assert pacer.done == 5
