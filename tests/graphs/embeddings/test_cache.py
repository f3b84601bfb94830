"""The content-hash LRU cache: only misses reach the inner model, bounds and eviction order, async and threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import msgspec
import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from graphs.embeddings.cache import CachedEmbeddings, CacheStats
from graphs.embeddings.hashing import HashingEmbeddings


class CountingEmbeddings(Embeddings):
    """A fake embedder that records every batch it is asked for."""

    def __init__(self) -> None:
        self.document_batches: list[list[str]] = []
        self.queries: list[str] = []
        self.async_document_batches: list[list[str]] = []
        self.async_queries: list[str] = []

    @staticmethod
    def vector(text: str) -> list[float]:
        return [float(len(text)), float(sum(map(ord, text)) % 97), 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_batches.append(list(texts))
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [-x for x in self.vector(text)]  # differs from the document vector, like Gemini's task types

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.async_document_batches.append(list(texts))
        return [self.vector(t) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        self.async_queries.append(text)
        return [-x for x in self.vector(text)]


@pytest.fixture(name="inner")
def fixture_inner() -> CountingEmbeddings:
    return CountingEmbeddings()


def cached(inner: Embeddings, max_entries: int = 100) -> CachedEmbeddings:
    return CachedEmbeddings(inner, model="fake", max_entries=max_entries)


def test_second_call_is_served_from_the_cache(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    first = cache.embed_documents(["alpha", "beta"])
    second = cache.embed_documents(["alpha", "beta"])
    assert first == second == [CountingEmbeddings.vector("alpha"), CountingEmbeddings.vector("beta")]
    assert inner.document_batches == [["alpha", "beta"]]
    assert cache.stats == CacheStats(hits=2, misses=2, size=2, max_entries=100)


def test_only_misses_reach_the_inner_model_in_one_ordered_batch(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    cache.embed_documents(["a", "b"])
    result = cache.embed_documents(["a", "c", "b", "d"])
    assert inner.document_batches == [["a", "b"], ["c", "d"]]
    assert result == [CountingEmbeddings.vector(t) for t in ["a", "c", "b", "d"]]


def test_duplicates_in_a_batch_are_embedded_once(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    result = cache.embed_documents(["x", "y", "x", "x"])
    assert inner.document_batches == [["x", "y"]]
    assert result == [CountingEmbeddings.vector(t) for t in ["x", "y", "x", "x"]]


def test_all_hits_do_not_call_the_inner_model(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    cache.embed_documents(["a"])
    cache.embed_documents(["a", "a"])
    cache.embed_documents([])
    assert inner.document_batches == [["a"]]


def test_queries_and_documents_are_cached_separately(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    document = cache.embed_documents(["q"])[0]
    query = cache.embed_query("q")
    assert query != document
    assert cache.embed_query("q") == query
    assert inner.queries == ["q"]


def test_size_is_bounded(inner: CountingEmbeddings) -> None:
    cache = cached(inner, max_entries=3)
    cache.embed_documents([str(i) for i in range(10)])
    assert cache.stats.size == 3


def test_least_recently_used_is_evicted_first(inner: CountingEmbeddings) -> None:
    cache = cached(inner, max_entries=2)
    cache.embed_documents(["a", "b"])
    cache.embed_documents(["a"])  # a is now more recent than b
    cache.embed_documents(["c"])  # evicts b
    inner.document_batches.clear()
    cache.embed_documents(["a", "c"])
    assert inner.document_batches == []
    cache.embed_documents(["b"])
    assert inner.document_batches == [["b"]]


def test_max_entries_zero_disables_caching(inner: CountingEmbeddings) -> None:
    cache = cached(inner, max_entries=0)
    cache.embed_documents(["a"])
    cache.embed_documents(["a"])
    cache.embed_query("a")
    cache.embed_query("a")
    assert inner.document_batches == [["a"], ["a"]]
    assert inner.queries == ["a", "a"]
    assert cache.stats == CacheStats(hits=0, misses=4, size=0, max_entries=0)


def test_negative_max_entries_is_rejected(inner: CountingEmbeddings) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        cached(inner, max_entries=-1)


def test_clear_resets_entries_and_counters(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    cache.embed_documents(["a", "a"])
    cache.clear()
    assert cache.stats == CacheStats(hits=0, misses=0, size=0, max_entries=100)


def test_inner_model_returning_the_wrong_count_is_an_error() -> None:
    class Short(CountingEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return super().embed_documents(texts)[:-1]

    with pytest.raises(ValueError):
        cached(Short()).embed_documents(["a", "b"])


def test_stats_encode_for_the_readiness_output(inner: CountingEmbeddings) -> None:
    cache = cached(inner, max_entries=7)
    cache.embed_documents(["a"])
    assert msgspec.json.decode(msgspec.json.encode(cache.stats)) == {
        "hits": 0,
        "misses": 1,
        "size": 1,
        "max_entries": 7,
    }


async def test_async_methods_use_the_inner_async_methods(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    assert await cache.aembed_documents(["a", "b", "a"]) == [CountingEmbeddings.vector(t) for t in "aba"]
    assert await cache.aembed_documents(["b", "c"]) == [CountingEmbeddings.vector(t) for t in "bc"]
    assert await cache.aembed_query("a") == await cache.aembed_query("a")
    assert inner.async_document_batches == [["a", "b"], ["c"]]
    assert inner.async_queries == ["a"]
    assert inner.document_batches == []
    assert inner.queries == []
    # The sync and async paths share one cache.
    assert cache.embed_documents(["c"]) == [CountingEmbeddings.vector("c")]
    assert inner.document_batches == []


async def test_async_matrix(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    matrix = await cache.aembed_matrix(["a", "bb"], kind="query")
    assert matrix.shape == (2, 3)
    assert inner.async_queries == ["a", "bb"]


def test_embed_matrix(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    assert cache.embed_matrix([]).shape == (0, 0)  # dimension unknown until something was embedded
    matrix = cache.embed_matrix(["a", "bb", "a"])
    assert matrix.dtype == np.float32
    assert matrix.shape == (3, 3)
    np.testing.assert_array_equal(matrix[0], matrix[2])
    assert cache.embed_matrix([]).shape == (0, 3)
    queries = cache.embed_matrix(["a"], kind="query")
    np.testing.assert_array_equal(queries[0], -matrix[0])


def test_embed_matrix_knows_the_hashing_dimension_up_front() -> None:
    cache = cached(HashingEmbeddings(dim=64))
    assert cache.embed_matrix([]).shape == (0, 64)
    np.testing.assert_allclose(
        cache.embed_matrix(["東京タワー"])[0], HashingEmbeddings(dim=64).embed_query("東京タワー"), rtol=1e-6
    )


def test_cached_vectors_cannot_be_mutated_through_results(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    matrix = cache.embed_matrix(["a"])
    matrix[0, 0] = 999.0  # np.stack copies, so the cache is unaffected
    assert cache.embed_documents(["a"]) == [CountingEmbeddings.vector("a")]


def test_surrogates_do_not_break_the_key(inner: CountingEmbeddings) -> None:
    cache = cached(inner)
    cache.embed_documents(["\ud800"])
    assert cache.stats.size == 1


def test_concurrent_use_keeps_the_bound_and_the_values() -> None:
    inner = HashingEmbeddings(dim=32)
    cache = cached(inner, max_entries=50)
    texts = [f"text {i % 120}" for i in range(2_000)]

    def work(offset: int) -> bool:
        batch = texts[offset : offset + 40]
        return cache.embed_documents(batch) == [
            np.asarray(v, dtype=np.float32).tolist() for v in inner.embed_documents(batch)
        ]

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(work, range(0, 2_000, 40)))
    stats = cache.stats
    assert stats.size <= 50
    assert stats.hits + stats.misses == 2_000


class ListlessHashing(HashingEmbeddings):
    """A matrix embedder whose list-returning async path must not be taken."""

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("the cache should ask a matrix embedder for a matrix, not lists of floats")


@pytest.mark.parametrize("count", [3, 300])  # inline, and on a worker thread
async def test_async_documents_of_a_matrix_embedder_skip_python_float_lists(count: int) -> None:
    texts = [f"text number {i}" for i in range(count)]
    cache = cached(ListlessHashing(dim=32))
    matrix = await cache.aembed_matrix(texts)
    np.testing.assert_array_equal(matrix, HashingEmbeddings(dim=32).embed_matrix(texts))
    assert all(v.base is None for v in cache._entries.values())  # own copies: one evicted row frees its memory
