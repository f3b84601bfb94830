"""The throughput benchmark's floor: the service's whole step, with the Librarian thinking about the first hits only."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest
import uvloop

import graphs.librarian.candidates as candidates
from bench.step_breakdown import asgi_post
from bench.thinking_floor_variant import FLOOR_HITS, first_hits_pool_steps
from contracts.librarian import SearchHit, SearchRound
from graphs.chunked import finish
from librarian_svc.app import create_app
from librarian_svc.settings import load_settings

QUESTION = "東京タワーの高さは何メートルですか"


def history(rounds: int = 3, hits: int = 40) -> list[SearchRound]:
    """`rounds` rounds of distinct hits, every one of which states the answer."""
    return [
        SearchRound(
            queries_text=["東京タワー 高さ"],
            results=[
                SearchHit(
                    document_id=f"doc-{r}-{i}",
                    page=1,
                    snippet=f"東京タワーの高さは333メートルです。第{r}回の資料{i}番、別の記述{i * 7 + r}。",
                    score=float(hits - i),
                )
                for i in range(hits)
            ],
        )
        for r in range(rounds)
    ]


def test_the_pool_holds_the_first_round_s_first_hits_only() -> None:
    rounds = history()
    pool = finish(first_hits_pool_steps(rounds, near_dup_threshold=0.8))
    service_pool = finish(candidates.pool_steps(rounds, near_dup_threshold=0.8))
    assert 0 < len(pool.candidates) <= FLOOR_HITS < len(service_pool.candidates)
    first = {hit.document_id for hit in rounds[0].results[:FLOOR_HITS]}
    assert {c.document_id for c in pool.candidates} <= first


def test_the_floor_s_step_reads_the_whole_request_and_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = history()
    body = msgspec.json.encode(
        {"request_id": "f1", "user_query": QUESTION, "subject_id": "bench", "search_history": rounds, "state": None}
    )
    monkeypatch.setattr(candidates, "pool_steps", first_hits_pool_steps)
    app = create_app(load_settings({"LLM_PROVIDER": "heuristic"}))

    async def step() -> tuple[int, bytes]:
        async with app.lifespan():
            return await asgi_post(app, "/agent/librarian/think", body)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        status, payload = runner.run(step())
    answer = json.loads(payload)
    assert (status, answer["action"]) == (200, "COMPLETE")
    first = {hit.document_id for hit in rounds[0].results[:FLOOR_HITS]}
    assert answer["evidence"]
    assert {e["document_id"] for e in answer["evidence"]} <= first
