"""Hybrid search: seed 000 properties 4–6, equivalence with the seed's design, Japanese, and the caches."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from rank_bm25 import BM25Okapi

from contracts.ace import Bullet, Playbook, SearchQuery
from graphs.ace.search.bm25 import Bm25Index
from graphs.ace.search.hybrid import BM25_TIE, COSINE_TIE, HybridSearch, min_max, top_k_order
from graphs.ace.search.index import IndexCache, build_index, search_text, texts_fingerprint
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from graphs.text.tokenize import tokenize
from librarian_svc.settings import ENV_DEFAULTS
from tests.graphs.ace.helpers import JAPANESE_PLAYBOOK, real_playbook

ALPHA = float(ENV_DEFAULTS["SEARCH_ALPHA"])

WORDS = ["page", "index", "loop", "api", "venmo", "balance", "song", "queue", "file", "date", "東京", "タワー", "高さ"]
SECTIONS = ["alpha", "beta", "gamma"]


class CountingEmbeddings(Embeddings):
    """The hashing embedder, counting how many texts reach it."""

    def __init__(self) -> None:
        self.inner = HashingEmbeddings(dim=64)
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.inner.embed_query(text)


def make_search(alpha: float = ALPHA) -> HybridSearch:
    return HybridSearch(CachedEmbeddings(HashingEmbeddings(dim=64), model="test/64"), alpha=alpha, cache=IndexCache())


SEARCH = make_search()


@st.composite
def search_cases(draw: st.DrawFn) -> tuple[Playbook, SearchQuery]:
    texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
    bullets = [
        Bullet(
            id=f"b-{i:05d}",
            section=draw(st.sampled_from(SECTIONS)),
            content=draw(texts),
            helpful=draw(st.integers(0, 4)),
            harmful=draw(st.integers(0, 4)),
        )
        for i in range(draw(st.integers(0, 25)))
    ]
    query = SearchQuery(
        query_text=draw(texts),
        top_k=draw(st.integers(1, 30)),
        section_filter=draw(st.none() | st.lists(st.sampled_from(SECTIONS), min_size=1, max_size=2)),
        min_confidence=draw(st.sampled_from([0.0, 0.3, 0.5, 0.75, 1.0])),
    )
    return Playbook(bullets=bullets), query


def seed_scores(search: HybridSearch, query: SearchQuery, candidates: list[Bullet]) -> dict[str, tuple[float, float]]:
    """Seed 000 §5 as written (re-embed, BM25Okapi over the candidates), with our tokeniser and tie rule."""
    if not candidates:
        return {}
    q = np.array(search.embeddings.embed_query(query.query_text))
    docs = np.array(search.embeddings.embed_documents([search_text(b) for b in candidates]))
    norms = np.linalg.norm(docs, axis=1) * np.linalg.norm(q)
    norms = np.where(norms == 0, 1, norms)
    vector = min_max(np.dot(docs, q) / norms, COSINE_TIE)
    corpus = [tokenize(search_text(b)) for b in candidates]
    lengths = sum(len(c) for c in corpus)
    raw = BM25Okapi(corpus).get_scores(tokenize(query.query_text)) if lengths else np.zeros(len(candidates))
    raw = np.asarray(raw, dtype=np.float64)
    bm25 = min_max(raw, BM25_TIE * max(1.0, float(np.abs(raw).max())))
    return {b.id: (float(v), float(s)) for b, v, s in zip(candidates, vector, bm25, strict=True)}


# Feature: self-reflection-system, Property 4: combined = α·vector + (1−α)·bm25, both min-max normalised
@settings(max_examples=100, deadline=None)
@given(case=search_cases(), alpha=st.floats(0.0, 1.0))
def test_combined_score_is_the_alpha_weighted_sum(case: tuple[Playbook, SearchQuery], alpha: float) -> None:
    playbook, query = case
    search = HybridSearch(SEARCH.embeddings, alpha=alpha, cache=SEARCH.cache)
    hits = search.search(query, playbook)
    for hit in hits:
        assert 0.0 <= hit.vector_score <= 1.0
        assert 0.0 <= hit.bm25_score <= 1.0
        assert hit.combined_score == alpha * hit.vector_score + (1 - alpha) * hit.bm25_score
    candidates = [
        b
        for b in playbook.bullets
        if (query.section_filter is None or b.section in query.section_filter)
        and b.confidence_score >= query.min_confidence
    ]
    expected = seed_scores(search, query, candidates)
    for hit in hits:
        vector, bm25 = expected[hit.bullet.id]
        assert math.isclose(hit.vector_score, vector, abs_tol=1e-5)
        assert math.isclose(hit.bm25_score, bm25, abs_tol=1e-9)


# Feature: self-reflection-system, Property 5: results are in the filtered sections and confident enough
@settings(max_examples=100, deadline=None)
@given(case=search_cases())
def test_results_respect_the_section_filter_and_min_confidence(case: tuple[Playbook, SearchQuery]) -> None:
    playbook, query = case
    hits = SEARCH.search(query, playbook)
    for hit in hits:
        assert query.section_filter is None or hit.bullet.section in query.section_filter
        assert hit.bullet.confidence_score >= query.min_confidence
    eligible = [
        b
        for b in playbook.bullets
        if (query.section_filter is None or b.section in query.section_filter)
        and b.confidence_score >= query.min_confidence
    ]
    assert len(hits) == min(query.top_k, len(eligible))


# Feature: self-reflection-system, Property 6: results are sorted by combined score and at most top_k
@settings(max_examples=100, deadline=None)
@given(case=search_cases())
def test_results_are_sorted_and_capped_at_top_k(case: tuple[Playbook, SearchQuery]) -> None:
    playbook, query = case
    hits = SEARCH.search(query, playbook)
    assert len(hits) <= query.top_k
    scores = [h.combined_score for h in hits]
    assert scores == sorted(scores, reverse=True)


@settings(max_examples=100, deadline=None)
@given(
    corpus=st.lists(st.lists(st.sampled_from(WORDS), max_size=8), min_size=1, max_size=20),
    query=st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5),
    keep=st.lists(st.booleans(), min_size=20, max_size=20),
)
def test_bm25_over_a_mask_equals_rank_bm25_over_the_subset(
    corpus: list[list[str]], query: list[str], keep: list[bool]
) -> None:
    mask = np.array(keep[: len(corpus)], dtype=np.bool_)
    subset = [doc for doc, kept in zip(corpus, mask, strict=True) if kept]
    if not subset or not any(subset):
        return  # rank_bm25 divides by a zero average length here; we answer zeros
    ours = Bm25Index(corpus).scores(query, mask)[mask]
    reference = BM25Okapi(subset).get_scores(query)
    assert np.allclose(ours, reference, rtol=1e-9, atol=1e-12)
    assert np.all(Bm25Index(corpus).scores(query, mask)[~mask] == 0)


@settings(max_examples=100)
@given(st.lists(st.floats(-10, 10), max_size=40), st.integers(1, 50))
def test_top_k_order_is_a_stable_sort_cut_at_k(values: list[float], k: int) -> None:
    scores = np.array(values, dtype=np.float64)
    assert top_k_order(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist()


def test_scores_equal_but_for_noise_normalise_to_one_half() -> None:
    assert min_max(np.array([0.7071067, 0.7071068]), tolerance=1e-6).tolist() == [0.5, 0.5]
    assert min_max(np.array([0.2, 0.7]), tolerance=1e-6).tolist() == [0.0, 1.0]


def test_bm25_of_an_all_empty_corpus_is_zero() -> None:
    assert Bm25Index([[], []]).scores(["x"]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("東京タワーの高さは何メートル？", "gen-00001"),
        ("富士山はどれくらい高い", "gen-00002"),
        ("How do I paginate an API?", "gen-00003"),
        ("venmo balance payment", "gen-00004"),
    ],
)
def test_japanese_and_english_queries_find_their_bullet(query: str, expected: str) -> None:
    hits = SEARCH.search(SearchQuery(query_text=query, top_k=4, min_confidence=0.0), JAPANESE_PLAYBOOK)
    assert hits[0].bullet.id == expected
    assert hits[0].bm25_raw > 0


def test_whitespace_tokens_find_nothing_in_japanese() -> None:
    """Why the seed's `str.split()` had to go: the Japanese bullet does not even share a token with the query."""
    corpus = [b.content.split() for b in JAPANESE_PLAYBOOK.bullets]
    assert BM25Okapi(corpus).get_scores(["東京タワーの高さは何メートル？"]).max() == 0.0


def test_a_warm_playbook_is_not_embedded_again() -> None:
    counting = CountingEmbeddings()
    search = HybridSearch(CachedEmbeddings(counting, model="counting"), alpha=ALPHA, cache=IndexCache())
    playbook = real_playbook()
    query = SearchQuery(query_text="paginate through all songs", top_k=5)
    distinct = len({b.content for b in playbook.bullets})  # the real playbook repeats some bullets verbatim
    first = search.search(query, playbook)
    assert counting.documents == distinct  # repeated texts are embedded once
    again = search.search(query, playbook)
    assert counting.documents == distinct  # no bullet re-embedded
    assert counting.queries == 1  # and the query came from the cache too
    assert [h.bullet.id for h in again] == [h.bullet.id for h in first]
    assert search.cache.hits == 1


def test_a_changed_bullet_is_the_only_one_embedded() -> None:
    counting = CountingEmbeddings()
    search = HybridSearch(CachedEmbeddings(counting, model="counting"), alpha=ALPHA, cache=IndexCache())
    playbook = real_playbook()
    query = SearchQuery(query_text="paginate through all songs")
    search.search(query, playbook)
    edited = Playbook(
        bullets=[Bullet(id="new-1", section="others", content="a brand new bullet"), *playbook.bullets[1:]]
    )
    search.search(query, edited)
    assert counting.documents == len({b.content for b in playbook.bullets}) + 1


def test_the_index_cache_is_bounded() -> None:
    cache = IndexCache(max_rows=10, max_indexes=2)
    search = HybridSearch(CachedEmbeddings(HashingEmbeddings(dim=16), model="b"), alpha=ALPHA, cache=cache)
    query = SearchQuery(query_text="x", min_confidence=0.0)
    for n in range(6):
        search.search(
            query, Playbook(bullets=[Bullet(id=f"b-{i}", section="s", content=f"text {n} {i}") for i in range(4)])
        )
    assert len(cache._entries) == 2
    assert cache._rows <= 10
    search.search(query, Playbook(bullets=[Bullet(id=f"b-{i}", section="s", content=f"t{i}") for i in range(11)]))
    assert cache._rows <= 10  # too big to cache: served, not kept


def test_an_empty_or_fully_filtered_playbook_gives_nothing() -> None:
    assert SEARCH.search(SearchQuery(query_text="x"), Playbook()) == []
    only_doubtful = Playbook(bullets=[Bullet(id="b-1", section="s", content="x", harmful=3)])
    assert SEARCH.search(SearchQuery(query_text="x", min_confidence=0.3), only_doubtful) == []


def test_alpha_outside_the_unit_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="alpha"):
        HybridSearch(SEARCH.embeddings, alpha=1.5)


def test_texts_that_share_a_fingerprint_never_share_an_index() -> None:
    cache = IndexCache()
    embeddings = CachedEmbeddings(HashingEmbeddings(dim=64), model="fingerprint")
    pad = "z" * 100
    first = Playbook(bullets=[Bullet(id="b-1", section="s", content=f"{pad} venmo balance {pad}")])
    second = Playbook(bullets=[Bullet(id="b-1", section="s", content=f"{pad} spotify queue {pad}")])
    assert texts_fingerprint([search_text(first.bullets[0])]) == texts_fingerprint([search_text(second.bullets[0])])
    a = build_index(embeddings, [search_text(first.bullets[0])], cache)
    b = build_index(embeddings, [search_text(second.bullets[0])], cache)
    assert cache.hits == 0
    assert not np.array_equal(a.vectors, b.vectors)
    assert build_index(embeddings, [search_text(second.bullets[0])], cache) is b
    assert cache.hits == 1
