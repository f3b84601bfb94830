"""The reference loop: the rounds it sends fit the contract, and it drives the service to an end."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar

from contracts.limits import LIBRARIAN
from reference_orchestrator.corpus import Chunk, Corpus
from reference_orchestrator.loop import execute_search, fit_round, run_question
from tests.support.asgi import asgi_client

LONG_CHUNK = ("東京タワーの高さは333メートルです。" + "東京タワーは港区芝公園にある電波塔で、" * 500)[:8_820]


class FixedResults:
    """A search side answering every query with `k` hits of `chars` characters, named after the query and rank."""

    def __init__(self, chars: int = 10) -> None:
        self.chars = chars

    def text_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        return [(Chunk(query, rank, f"{query}#{rank}", "x" * self.chars), float(k - rank)) for rank in range(k)]

    vector_search = text_search


def _tower_corpus() -> Corpus:
    return Corpus([Chunk("tower", 0, "tower#0", LONG_CHUNK), Chunk("sky", 0, "sky#0", "スカイツリーは634メートル。")])


def _round(hits: int, chars: int) -> dict[str, Any]:
    """A round already sent: `hits` hits whose snippets add up to `chars` characters."""
    sizes = [chars // hits + (i < chars % hits) for i in range(hits)]
    return {"queries_text": ["q"], "queries_vector": [], "results": [{"snippet": "y" * size} for size in sizes]}


def test_a_chunk_longer_than_a_snippet_is_sent_cut_to_the_contracts_limit() -> None:
    assert len(LONG_CHUNK) == 8_820
    corpus = _tower_corpus()
    round_ = execute_search(corpus, {"queries_text": ["東京タワー"], "queries_vector": []}, k=5, vector=False)
    [hit] = round_["results"]
    assert hit["snippet"] == LONG_CHUNK[: LIBRARIAN.snippet_chars]


def test_a_round_keeps_every_querys_best_hits_within_the_hit_limit() -> None:
    queries = [f"q{i:02}" for i in range(16)]
    round_ = execute_search(FixedResults(), {"queries_text": queries, "queries_vector": []}, k=20, vector=False)
    results = round_["results"]
    assert len(results) == LIBRARIAN.hits_per_round == 300  # of 320
    per_query = {q: [h["page"] for h in results if h["metadata"]["query"] == q] for q in queries}
    assert all(ranks == list(range(len(ranks))) for ranks in per_query.values())  # each query's best, in order
    assert {len(ranks) for ranks in per_query.values()} == {19, 18}  # 300 = 12 × 19 + 4 × 18: rank by rank
    assert [h["metadata"]["query"] for h in results] == sorted(h["metadata"]["query"] for h in results)


@pytest.mark.parametrize(
    ("history", "hits", "chars"),
    [
        ([], 40, 400),  # 4 queries × 10 hits × 10 characters: all of it
        ([_round(300, 3_000)] * 3, 40, 400),
        ([_round(300, 3_000)] * 3 + [_round(75, 750)], 25, 250),  # hits_total: 1,000
        ([_round(10, 299_905)], 10, 95),  # snippet_chars_total: 300,000; the last hit cut to what is left
        ([_round(10, 300_000)], 0, 0),
    ],
)
def test_a_round_fits_what_the_history_leaves_of_the_totals(
    history: list[dict[str, Any]], hits: int, chars: int
) -> None:
    lists = [
        [{"snippet": "z" * 10, "metadata": {"query": f"q{i}"}, "rank": rank} for rank in range(10)] for i in range(4)
    ]
    kept = fit_round(lists, history)
    assert (len(kept), sum(len(h["snippet"]) for h in kept)) == (hits, chars)
    assert {h["rank"] for h in kept} == set(range(-(-hits // 4)))  # rank by rank across the four queries


async def test_a_loop_over_a_chunk_longer_than_a_snippet_completes(app: Litestar) -> None:
    """It used to end at step 2: INVALID_INPUT, `$.search_history[0].results[0].snippet` over 8,000 characters."""
    corpus = _tower_corpus()
    async with asgi_client(app) as client:
        result = await run_question(
            client, corpus, "東京タワーの高さは何メートルですか", request_id="long", vector=False
        )
    assert result.action == "COMPLETE", result.final
    assert result.final["evidence"][0]["document_id"] == "tower"
