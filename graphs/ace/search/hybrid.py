"""Hybrid search over a playbook (seed 000 §5): α-weighted min-max-normalised cosine + BM25.

As in the seed: filter the candidates by `section_filter` and `min_confidence`, score every candidate by
cosine similarity to the query and by BM25, min-max normalise each score over the candidates (0.5 for all
when they are all equal, or equal but for rounding noise), combine as
α·vector + (1−α)·bm25, sort descending and keep `top_k`.

Where the seed is broken, this is not: tokens come from `graphs.text.tokenize` (character bigrams for
Japanese, where `str.split()` finds nothing), and the playbook's vectors and BM25 postings come from the
cached `PlaybookIndex` instead of being recomputed for every query. Ties keep playbook order, so results
are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from contracts.ace import Bullet, Playbook, SearchQuery, SearchResult
from graphs.ace.search.index import (
    INDEX_CACHE,
    IndexCache,
    PlaybookIndex,
    abuild_index,
    build_index,
    cosines,
    search_text,
)
from graphs.context import UNBOUNDED, Budget
from graphs.text.tokenize import tokenize

Floats = npt.NDArray[np.float64]

COSINE_TIE = 1e-6
"""Cosines spanning less than this count as all equal (float32 rounding noise), see `min_max`."""
BM25_TIE = 1e-9
"""The same for BM25 scores, relative to the largest one (summation-order noise)."""


@dataclass(frozen=True)
class Hit:
    """A search result plus the raw (un-normalised) scores, which say whether a hit matches at all."""

    bullet: Bullet
    vector_score: float
    bm25_score: float
    combined_score: float
    cosine: float
    bm25_raw: float

    def to_result(self) -> SearchResult:
        """The wire form (normalised scores only, as in the seed)."""
        return SearchResult(
            bullet=self.bullet,
            vector_score=self.vector_score,
            bm25_score=self.bm25_score,
            combined_score=self.combined_score,
        )


def min_max(scores: Floats, tolerance: float = 0.0) -> Floats:
    """Seed 000 §5's normalisation: to [0, 1] over the candidates, or 0.5 for all when they are equal.

    Scores spanning no more than `tolerance` count as equal: float32 vectors of identical or same-direction
    texts differ by rounding noise, which normalising would blow up into a 0-versus-1 difference.
    """
    if scores.size == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high - low > tolerance:
        return (scores - low) / (high - low)
    return np.full_like(scores, 0.5)


def top_k_order(scores: Floats, k: int) -> npt.NDArray[np.intp]:
    """Indices of the `k` best scores, best first, ties in index order (playbook order), without a full sort."""
    if scores.size > k:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        above = np.flatnonzero(scores > kth)
        chosen = np.concatenate([above, np.flatnonzero(scores == kth)[: k - above.size]])
    else:
        chosen = np.arange(scores.size)
    order: npt.NDArray[np.intp] = chosen[np.lexsort((chosen, -scores[chosen]))]
    return order


def candidate_mask(query: SearchQuery, bullets: list[Bullet]) -> npt.NDArray[np.bool_]:
    """Which bullets may be returned: in one of the filter's sections (if any) and confident enough."""
    sections = set(query.section_filter) if query.section_filter else None
    return np.fromiter(
        ((sections is None or b.section in sections) and b.confidence_score >= query.min_confidence for b in bullets),
        dtype=np.bool_,
        count=len(bullets),
    )


class HybridSearch:
    """Seed 000's `HybridSearch`, with `search` (synchronous embedders) and `asearch` (any embedder)."""

    def __init__(
        self, embeddings: Embeddings, *, alpha: float, cache: IndexCache = INDEX_CACHE, budget: Budget = UNBOUNDED
    ) -> None:
        """Search with `embeddings` (normally the context's `CachedEmbeddings`).

        Args:
            embeddings: The embedder for bullets and queries.
            alpha: Weight of the vector score (0..1); BM25 gets 1 − alpha (`SEARCH_ALPHA` by default).
            cache: Where built playbook indexes are kept.
            budget: What stops an index build (the request's `AgentContext`); unbounded by default.

        Raises:
            ValueError: If alpha is outside [0, 1].
        """
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be within [0, 1], got {alpha}")
        self.embeddings = embeddings
        self.alpha = alpha
        self.cache = cache
        self.budget = budget

    def search(self, query: SearchQuery, playbook: Playbook) -> list[Hit]:
        """Rank the playbook's bullets for `query`; best first, at most `top_k`."""
        mask = candidate_mask(query, playbook.bullets)
        if not mask.any():
            return []
        index = build_index(self.embeddings, [search_text(b) for b in playbook.bullets], self.cache)
        vector = np.asarray(self.embeddings.embed_query(query.query_text), dtype=np.float32)
        return self._rank(index, vector, query, playbook.bullets, mask)

    async def asearch(self, query: SearchQuery, playbook: Playbook) -> list[Hit]:
        """Async `search`: the embedder is awaited (remote providers), big indexes are built off the loop."""
        mask = candidate_mask(query, playbook.bullets)
        if not mask.any():
            return []
        index = await abuild_index(self.embeddings, [search_text(b) for b in playbook.bullets], self.cache, self.budget)
        vector = np.asarray(await self.embeddings.aembed_query(query.query_text), dtype=np.float32)
        return self._rank(index, vector, query, playbook.bullets, mask)

    async def aterm_weights(
        self, playbook: Playbook, tokens: Iterable[str], key: Callable[[str], str] | None = None
    ) -> dict[str, float]:
        """How telling each token is in this playbook: log((N + 1) / (df + 0.5)); tokens no bullet holds are left out.

        A word most bullets share ("api" in AppWorld) weighs little, a rare one much. With `key` (a stemmer),
        a token counts as held when any token with the same key is (paginated ~ pagination). The index is the
        one search has just built (cached), so this costs a dictionary lookup per token.
        """
        if not playbook.bullets:
            return {}
        index = await abuild_index(self.embeddings, [search_text(b) for b in playbook.bullets], self.cache, self.budget)
        size = index.bm25.size
        grouped = index.bm25.frequencies_by(key) if key is not None else None
        weights: dict[str, float] = {}
        for token in tokens:
            df = (
                grouped.get(key(token), 0)
                if grouped is not None and key is not None
                else index.bm25.document_frequency(token)
            )
            if df:
                weights[token] = math.log((size + 1) / (df + 0.5))
        return weights

    def _rank(
        self,
        index: PlaybookIndex,
        vector: npt.NDArray[np.float32],
        query: SearchQuery,
        bullets: list[Bullet],
        mask: npt.NDArray[np.bool_],
    ) -> list[Hit]:
        rows = np.flatnonzero(mask)
        everything = rows.size == index.size
        vectors = index.vectors if everything else index.vectors[rows]
        norms = index.norms if everything else index.norms[rows]
        cosine = cosines(vectors, vector, norms)
        bm25 = index.bm25.scores(tokenize(query.query_text), None if everything else mask)[rows]
        vector_scores = min_max(cosine, COSINE_TIE)
        bm25_scores = min_max(bm25, BM25_TIE * max(1.0, float(np.abs(bm25).max(initial=0.0))))
        combined = self.alpha * vector_scores + (1.0 - self.alpha) * bm25_scores
        order = top_k_order(combined, query.top_k)
        return [
            Hit(
                bullet=bullets[int(rows[i])],
                vector_score=float(vector_scores[i]),
                bm25_score=float(bm25_scores[i]),
                combined_score=float(combined[i]),
                cosine=float(cosine[i]),
                bm25_raw=float(bm25[i]),
            )
            for i in order
        ]
