"""Chunked CPU work: one generator, driven to its result with a pause (check or checkpoint) between chunks."""

from __future__ import annotations

import asyncio

import pytest

from graphs.chunked import Chunked, finish, finish_async


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
