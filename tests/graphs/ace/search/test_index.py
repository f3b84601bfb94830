"""The index build is lean and bounded: BM25 from one pass over a stream, and the build stops at the deadline."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from graphs.ace.search.bm25 import BUILD_CHUNK, Bm25Index
from graphs.ace.search.index import INLINE_BUILD_LIMIT, IndexCache, abuild_index, build_index, texts_fingerprint
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from graphs.errors import DeadlineExceeded
from graphs.text.tokenize import tokenize
from tests.support.context import make_context

TEXTS = [f"lesson {i} about page {i % 7} and api {i % 11}" for i in range(INLINE_BUILD_LIMIT + 500)]


def test_bm25_from_a_stream_scores_as_from_lists() -> None:
    corpus = [tokenize(t) for t in TEXTS[:300]]
    streamed = Bm25Index(tokenize(t) for t in TEXTS[:300])
    listed = Bm25Index(corpus)
    query = tokenize("page 3 api 5")
    np.testing.assert_array_equal(streamed.scores(query), listed.scores(query))
    assert streamed.size == 300


class CountedBudget:
    """Raises `DeadlineExceeded` on the `limit`-th check, and records the thread of every check."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.checks = 0
        self.threads: set[int] = set()

    def check_deadline(self) -> None:
        self.checks += 1
        self.threads.add(threading.get_ident())
        if self.checks >= self.limit:
            raise DeadlineExceeded("spent")

    async def checkpoint(self) -> None:
        self.check_deadline()
        await asyncio.sleep(0)


def test_a_big_build_stops_on_its_worker_thread_when_the_budget_is_spent() -> None:
    budget = CountedBudget(limit=1)  # the first check inside BM25's build, after BUILD_CHUNK documents
    embeddings = CachedEmbeddings(HashingEmbeddings(dim=64), model="index-test")
    cache = IndexCache()
    with pytest.raises(DeadlineExceeded):
        asyncio.run(abuild_index(embeddings, TEXTS, cache, budget))
    assert len(TEXTS) > BUILD_CHUNK
    assert budget.checks == 1
    assert threading.get_ident() not in budget.threads  # it stopped on the worker thread
    assert cache.get(("index-test", texts_fingerprint(TEXTS)), TEXTS) is None  # nothing half-built was kept


def test_a_build_past_the_requests_deadline_stops() -> None:
    context = make_context().for_request(timeout_s=0.0)
    with pytest.raises(DeadlineExceeded):
        asyncio.run(
            abuild_index(CachedEmbeddings(HashingEmbeddings(dim=64), model="t"), TEXTS * 3, IndexCache(), context)
        )


def test_a_chunked_build_equals_one_built_at_once() -> None:
    embeddings = CachedEmbeddings(HashingEmbeddings(dim=64), model="chunks")
    texts = TEXTS * 3  # more than one embedding chunk
    chunked = asyncio.run(abuild_index(embeddings, texts, IndexCache()))
    whole = build_index(embeddings, texts, IndexCache())
    np.testing.assert_array_equal(chunked.vectors, whole.vectors)
    np.testing.assert_array_equal(chunked.bm25.posting_docs, whole.bm25.posting_docs)
    assert chunked.vectors.dtype == np.float32
