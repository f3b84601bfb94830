"""Building the pool stops at the request's deadline and lets the event loop run between chunks."""

from __future__ import annotations

import asyncio
import time

import pytest
from litestar import Litestar
from litestar.testing import TestClient

import graphs.librarian.candidates as candidates
import graphs.text.contradiction as contradiction
from contracts.librarian import SearchRound
from graphs.errors import DeadlineExceeded
from graphs.librarian.candidates import build_pool, build_pool_async
from graphs.text.normalize import normalize_many
from tests.graphs.librarian.helpers import hit, round_of
from tests.support.context import make_context

THINK = "/agent/librarian/think"


def large_history(rounds: int = 10, hits: int = 500) -> list[SearchRound]:
    """5,000 distinct hits of ~120 characters: hundreds of milliseconds of work, many chunks."""
    return [
        round_of(
            *(
                hit(f"d{r}-{i}", f"第{r}章第{i}節。東京タワーは港区にある電波塔で、高さは{i + r}メートル。" * 3, page=i)
                for i in range(hits)
            )
        )
        for r in range(rounds)
    ]


def test_a_tiny_budget_on_a_large_pool_raises_deadline_exceeded() -> None:
    history = large_history()
    context = make_context().for_request(timeout_s=0.001)
    with pytest.raises(DeadlineExceeded):
        asyncio.run(build_pool_async(history, near_dup_threshold=0.8, checkpoint=context.checkpoint))


def test_other_tasks_run_while_a_large_pool_is_built() -> None:
    history = large_history()
    context = make_context().for_request(timeout_s=60.0)

    async def both() -> tuple[int, int]:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        pool = await build_pool_async(history, near_dup_threshold=0.8, checkpoint=context.checkpoint)
        done = True
        await task
        return ticks, len(pool.candidates)

    ticks, size = asyncio.run(both())
    assert size == len(build_pool(history, near_dup_threshold=0.8).candidates)
    assert ticks > 10  # the loop ran the other task between chunks, not only once at the end


def test_the_think_endpoint_answers_timeout_within_its_budget_while_ingesting(
    client: TestClient[Litestar], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Make every hit slow to fold (2 ms) and chunks small: 300 hits (the limit) take 0.6 s, the budget is 0.1 s.

    def slow_normalize_many(texts: list[str]) -> list[str]:
        time.sleep(0.002 * len(texts))
        return normalize_many(texts)

    monkeypatch.setattr(candidates, "normalize_many", slow_normalize_many)
    monkeypatch.setattr(candidates, "_HITS_PER_CHUNK", 8)
    results = [
        {"document_id": f"d{i}", "page": i, "snippet": f"東京タワーの高さは{i}メートル。", "score": 1.0}
        for i in range(300)
    ]
    body = {
        "request_id": "deadline",
        "user_query": "東京タワーの高さは何メートルですか",
        "subject_id": "s",
        "search_history": [{"queries_text": ["東京タワー 高さ"], "results": results}],
        "constraints": {"timeout_ms": 100},
    }
    started = time.monotonic()
    answer = client.post(THINK, json=body).json()
    elapsed = time.monotonic() - started
    assert answer["action"] == "ERROR", answer
    assert answer["error_type"] == "TIMEOUT"
    assert elapsed < 0.1 + 0.5


def one_place_versions(count: int, chars: int = 3_000) -> list[SearchRound]:
    """`count` hits at one document, page and chunk, each the same long passage with another figure in it."""
    filler = "東京タワーは港区芝公園にある電波塔である。" * (chars // 21)
    return [round_of(*(hit("tower", f"{filler}高さは{300 + i}メートル。", page=3) for i in range(count)))]


def test_versions_of_one_place_are_compared_a_bounded_number_of_times_and_pause_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every hit contradicts every other: each is checked against at most VERSIONS_COMPARED, and long texts
    count for their length, so the pool pauses for the deadline as it goes, not once at the end."""
    calls = 0
    real = contradiction.find_contradiction

    def counting(first: str, second: str) -> object:
        nonlocal calls
        calls += 1
        return real(first, second)

    monkeypatch.setattr(candidates, "find_contradiction", counting)
    history = one_place_versions(40)
    steps = candidates.pool_steps(history, near_dup_threshold=0.8)
    pauses = 0
    try:
        while True:
            next(steps)
            pauses += 1
    except StopIteration as done:
        pool = done.value
    assert len(pool.candidates) == 40  # every figure is a version of its own
    assert calls <= 39 * candidates.VERSIONS_COMPARED
    assert pauses >= 30  # about one pause a hit: 8 checks of 6,000 characters each are over a chunk's work
