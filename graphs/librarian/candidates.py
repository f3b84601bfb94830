"""The deduplicated candidate pool, re-derived from `search_history` on every call (seed 003 §2.3).

Exact duplicates (same document/page/chunk, or the same normalised text) and near-duplicates
(character-shingle Jaccard at or above a threshold, pre-filtered with MinHash) collapse into one
candidate that keeps the best-scored copy and every query and round that found it. The pool is
rebuilt rather than stored in state: it is deterministic, so every instance derives the same pool.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from contracts.librarian import SearchHit, SearchRound
from graphs.text.contradiction import find_contradiction
from graphs.text.normalize import normalize
from graphs.text.shingles import jaccard_arrays, minhash_signature, shingle_array
from graphs.text.tokenize import tokenize_normalized

NUM_PERM = 64
"""MinHash signature length used to pre-filter near-duplicate candidates."""
RRF_K = 10
"""Reciprocal-rank-fusion constant: small, because result lists are short (top-k per query)."""


@dataclass
class Candidate:
    """One distinct piece of evidence and everything known about how it was found."""

    cid: str
    document_id: str
    page: int | None
    chunk_id: str | None
    snippet: str
    best_score: float | None
    fused_rank: float = 0.0
    norm_score: float = 0.0
    queries: list[str] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    occurrences: int = 0
    merged: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    normalized: str = ""
    tokens: frozenset[str] = frozenset()

    @property
    def pages(self) -> list[int]:
        """Every page this evidence (and its merged duplicates from the same document) stands on."""
        found = {self.page} if self.page is not None else set()
        found.update(p for d, p, _ in self.merged if d == self.document_id and p is not None)
        return sorted(found)


@dataclass
class CandidatePool:
    """Candidates in first-seen order, with the indexes used to merge duplicates."""

    near_dup_threshold: float
    candidates: list[Candidate] = field(default_factory=list)
    _by_location: dict[tuple[str, int | None, str | None], int] = field(default_factory=dict)
    _by_text: dict[str, int] = field(default_factory=dict)
    _shingles: list[np.ndarray] = field(default_factory=list)
    # One MinHash row per candidate, grown by doubling so a lookup is one vectorised comparison.
    _signatures: np.ndarray = field(default_factory=lambda: np.zeros((16, NUM_PERM), dtype=np.uint64))

    def by_id(self) -> dict[str, Candidate]:
        """Candidates keyed by their pool id (`c1`, `c2`, …)."""
        return {c.cid: c for c in self.candidates}

    def _find_near_duplicate(self, sh: np.ndarray, sig: np.ndarray, snippet: str) -> int | None:
        count = len(self.candidates)
        if not count or not len(sh):
            return None
        estimates = np.mean(self._signatures[:count] == sig, axis=1)
        # MinHash is an estimate; confirm the few plausible ones with the exact Jaccard. Texts that look
        # alike but state different figures, opposite claims or different names are two sources that
        # disagree, never one candidate: merging them would hide the contradiction.
        for index in np.flatnonzero(estimates >= self.near_dup_threshold - 0.15):
            other = self.candidates[int(index)]
            if jaccard_arrays(sh, self._shingles[int(index)]) >= self.near_dup_threshold and not disagree(
                snippet, other.snippet
            ):
                return int(index)
        return None

    def _remember_signature(self, index: int, sig: np.ndarray) -> None:
        if index >= len(self._signatures):
            grown = np.zeros((2 * len(self._signatures), NUM_PERM), dtype=np.uint64)
            grown[: len(self._signatures)] = self._signatures
            self._signatures = grown
        self._signatures[index] = sig

    def add(
        self, hit: SearchHit, *, round_index: int, rank: int, query: str | None, top_score: float | None = None
    ) -> Candidate:
        """Merge one hit into the pool and return the candidate it now belongs to."""
        location = (hit.document_id, hit.page, hit.chunk_id)
        index = self._by_location.get(location) if (hit.page is not None or hit.chunk_id) else None
        normalized = ""
        text_key = ""
        if index is None:
            normalized = normalize(hit.snippet)
            text_key = hashlib.blake2b(normalized.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
            index = self._by_text.get(text_key)
        if index is None:
            sh = shingle_array(normalized)
            sig = minhash_signature(sh, NUM_PERM)
            index = self._find_near_duplicate(sh, sig, hit.snippet)
            if index is None:
                index = len(self.candidates)
                self.candidates.append(
                    Candidate(
                        cid=f"c{index + 1}",
                        document_id=hit.document_id,
                        page=hit.page,
                        chunk_id=hit.chunk_id,
                        snippet=hit.snippet,
                        best_score=hit.score,
                        normalized=normalized,
                        tokens=frozenset(tokenize_normalized(normalized)),
                    )
                )
                self._shingles.append(sh)
                self._remember_signature(index, sig)
        candidate = self.candidates[index]
        if location != (candidate.document_id, candidate.page, candidate.chunk_id) and location not in candidate.merged:
            candidate.merged.append(location)
        if hit.score is not None and (candidate.best_score is None or hit.score > candidate.best_score):
            candidate.best_score = hit.score
            if location[0] == candidate.document_id and hit.snippet != candidate.snippet:
                candidate.snippet = hit.snippet
                candidate.normalized = normalized or normalize(hit.snippet)
                candidate.tokens = frozenset(tokenize_normalized(candidate.normalized))
        self._by_location.setdefault(location, index)
        if text_key:
            self._by_text.setdefault(text_key, index)
        candidate.occurrences += 1
        candidate.fused_rank += 1.0 / (RRF_K + rank)
        if hit.score is not None and top_score:
            candidate.norm_score = max(candidate.norm_score, min(1.0, hit.score / top_score))
        if query and query not in candidate.queries:
            candidate.queries.append(query)
        if round_index not in candidate.rounds:
            candidate.rounds.append(round_index)
        return candidate


_NAME = re.compile(r"[\u30a1-\u30fa\u30fc]{2,}|\b[A-Z][a-zA-Z]+\b")


def _names(text: str) -> set[str]:
    """Name-like words: katakana runs and capitalised Latin words (a proxy for named entities)."""
    return {m.group() for m in _NAME.finditer(text)}


def disagree(first: str, second: str) -> bool:
    """Whether two similar texts say different things: other figures, opposite polarity, or other names."""
    if find_contradiction(first, second) is not None:
        return True
    names_a, names_b = _names(first), _names(second)
    return bool(names_a - names_b) and bool(names_b - names_a)  # a name replaced, not merely added


def _hit_query(hit: SearchHit, round_: SearchRound) -> str | None:
    """Which query found a hit: `metadata.query` when the caller says, else the round's only query."""
    query = hit.metadata.get("query")
    if isinstance(query, str) and query:
        return query
    issued = [*round_.queries_text, *round_.queries_vector]
    return issued[0] if len(issued) == 1 else None


def build_pool(history: list[SearchRound], *, near_dup_threshold: float) -> CandidatePool:
    """Fold every round of the history into one deduplicated pool.

    Rank for fusion is the hit's position among the hits of the same query (or of the round when
    the caller does not say which query found it), so a hit near the top of any list counts most.
    """
    pool = CandidatePool(near_dup_threshold=near_dup_threshold)
    for round_index, round_ in enumerate(history):
        # Hits are grouped into ranked lists: one per query when the caller says which query found
        # a hit (`metadata.query`); otherwise a rising score marks the start of the next list.
        lists: list[list[tuple[SearchHit, str | None]]] = []
        previous: tuple[str | None, float | None] | None = None
        for hit in round_.results:
            query = _hit_query(hit, round_)
            new_list = previous is None or query != previous[0]
            if query is None and previous is not None and hit.score is not None and previous[1] is not None:
                new_list = new_list or hit.score > previous[1]
            if new_list:
                lists.append([])
            lists[-1].append((hit, query))
            previous = (query, hit.score)
        for ranked in lists:
            scores = [h.score for h, _ in ranked if h.score is not None and h.score > 0]
            top = max(scores) if scores else None
            for rank, (hit, query) in enumerate(ranked, start=1):
                pool.add(hit, round_index=round_index, rank=rank, query=query, top_score=top)
    return pool
