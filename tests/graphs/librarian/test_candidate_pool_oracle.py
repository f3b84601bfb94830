"""The bulk candidate pool decides exactly as the per-hit pool did before it (kept here as the oracle).

The oracle is the Librarian's previous `CandidatePool.add`: each hit normalised, shingled and MinHashed
on its own and compared with every earlier candidate (quadratic, which is why it was replaced). On any
input where no text has more than `NEAR_DUP_MAX_COMPARED` candidates, the two must build the same pool.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.librarian_throughput import build_payload
from contracts.librarian import LibrarianRequest, SearchHit, SearchRound
from graphs.librarian.candidates import (
    VERSIONS_COMPARED,
    Candidate,
    CandidatePool,
    Location,
    _placed_hits,
    build_pool,
    disagree,
    same_passage,
    stands_in,
)
from graphs.text.contradiction import find_contradiction
from graphs.text.normalize import normalize
from graphs.text.shingles import jaccard_arrays, minhash_signature, shingle_array
from graphs.text.tokenize import tokenize_normalized
from tests.graphs.librarian.helpers import hit, round_of

NUM_PERM = 64
NO_SIGNATURE = np.full(NUM_PERM, np.iinfo(np.uint64).max, dtype=np.uint64)


@dataclass
class OraclePool:
    """The previous implementation, verbatim in its decisions (hit by hit, all pairs)."""

    near_dup_threshold: float
    candidates: list[Candidate] = field(default_factory=list)
    by_location: dict[tuple[str, int | None, str | None], int] = field(default_factory=dict)
    by_text: dict[str, int] = field(default_factory=dict)
    versions: dict[Location, list[int]] = field(default_factory=dict)
    shingles: list[np.ndarray] = field(default_factory=list)
    signatures: list[np.ndarray] = field(default_factory=list)
    comparisons: int = 0

    def find_near_duplicate(self, sh: np.ndarray, sig: np.ndarray, snippet: str) -> int | None:
        if not self.candidates or not len(sh):
            return None
        estimates = np.mean(np.array(self.signatures) == sig, axis=1)
        self.comparisons += len(self.candidates)
        for index in np.flatnonzero(estimates >= self.near_dup_threshold - 0.15):
            other = self.candidates[int(index)]
            if jaccard_arrays(sh, self.shingles[int(index)]) >= self.near_dup_threshold and not disagree(
                snippet, other.snippet
            ):
                return int(index)
        return None

    def _new(self, hit: SearchHit, normalized: str, sh: np.ndarray, sig: np.ndarray) -> int:
        """A new candidate; one with no shingles (another version of a location) is no near-duplicate's target."""
        self.candidates.append(
            Candidate(
                cid=f"c{len(self.candidates) + 1}",
                document_id=hit.document_id,
                page=hit.page,
                chunk_id=hit.chunk_id,
                snippet=hit.snippet,
                best_score=hit.score,
                normalized=normalized,
            )
        )
        self.shingles.append(sh)
        self.signatures.append(sig)
        return len(self.candidates) - 1

    def at_location(self, hit: SearchHit, location: Location, index: int) -> tuple[int, str, str]:
        """The first version at the location the hit does not contradict, else its text's or a new candidate."""
        normalized = normalize(hit.snippet)
        tokens = frozenset(tokenize_normalized(normalized))
        here = self.versions.setdefault(location, [index])
        for other_index in here[:VERSIONS_COMPARED]:
            other = self.candidates[other_index]
            excerpt = stands_in(normalized, other.normalized) or stands_in(other.normalized, normalized)
            if excerpt or not (
                same_passage(tokens, other.tokens, one_place=True) and find_contradiction(hit.snippet, other.snippet)
            ):
                return other_index, normalized, ""
        text_key = hashlib.blake2b(normalized.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        found = self.by_text.get(text_key)
        if found is None:
            found = self._new(hit, normalized, np.zeros(0, dtype=np.uint64), NO_SIGNATURE)
        here.append(found)
        return found, normalized, text_key

    def add(self, hit: SearchHit, *, round_index: int, rank: int, query: str | None, top_score: float | None) -> None:
        location = (hit.document_id, hit.page, hit.chunk_id)
        index = self.by_location.get(location) if (hit.page is not None or hit.chunk_id) else None
        normalized = ""
        text_key = ""
        if index is not None and hit.snippet != self.candidates[index].snippet:
            index, normalized, text_key = self.at_location(hit, location, index)
        if index is None:
            normalized = normalize(hit.snippet)
            text_key = hashlib.blake2b(normalized.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
            index = self.by_text.get(text_key)
        if index is None:
            sh = shingle_array(normalized)
            sig = minhash_signature(sh, NUM_PERM)
            index = self.find_near_duplicate(sh, sig, hit.snippet)
            if index is None:
                index = self._new(hit, normalized, sh, sig)
        candidate = self.candidates[index]
        if location != (candidate.document_id, candidate.page, candidate.chunk_id) and location not in candidate.merged:
            candidate.merged.append(location)
        if hit.score is not None and (candidate.best_score is None or hit.score > candidate.best_score):
            candidate.best_score = hit.score
            if location[0] == candidate.document_id and hit.snippet != candidate.snippet:
                candidate.snippet = hit.snippet
                candidate.normalized = normalized or normalize(hit.snippet)
                candidate._tokens = None  # read before (a version check), stale now
        self.by_location.setdefault(location, index)
        if text_key:
            self.by_text.setdefault(text_key, index)
        candidate.occurrences += 1
        candidate.fused_rank += 1.0 / (10 + rank)
        if hit.score is not None and top_score:
            candidate.norm_score = max(candidate.norm_score, min(1.0, hit.score / top_score))
        if query and query not in candidate.queries:
            candidate.queries.append(query)
        if round_index not in candidate.rounds:
            candidate.rounds.append(round_index)


def oracle_pool(history: list[SearchRound], threshold: float) -> OraclePool:
    pool = OraclePool(near_dup_threshold=threshold)
    for placed in _placed_hits(history):
        pool.add(
            placed.hit, round_index=placed.round_index, rank=placed.rank, query=placed.query, top_score=placed.top_score
        )
    return pool


def described(candidates: list[Candidate]) -> list[tuple[object, ...]]:
    """Everything a candidate carries into scoring and the response."""
    return [
        (
            c.cid,
            c.document_id,
            c.page,
            c.chunk_id,
            c.snippet,
            c.best_score,
            c.fused_rank,
            c.norm_score,
            c.queries,
            c.rounds,
            c.occurrences,
            c.merged,
            c.normalized,
            c.tokens,
            c.pages,
        )
        for c in candidates
    ]


def assert_same_pool(history: list[SearchRound], threshold: float) -> CandidatePool:
    pool = build_pool(history, near_dup_threshold=threshold)
    assert described(pool.candidates) == described(oracle_pool(history, threshold).candidates)
    return pool


TOWER = "東京タワーは東京都港区芝公園にある総合電波塔で、高さは333メートルである。1958年12月23日に竣工した。"
FUJI = "富士山は静岡県と山梨県にまたがる活火山で、標高は3776メートルである。日本の最高峰として知られる。"

CASES = {
    "same location, better score later": [
        round_of(hit("doc", TOWER, page=1, score=2.0, query="a"), queries=["a"]),
        round_of(hit("doc", TOWER + "追記", page=1, score=5.0, query="b"), queries=["b"]),
    ],
    "same text elsewhere": [round_of(hit("a", TOWER, page=1), hit("b", "  " + TOWER.upper() + " "))],
    "near-duplicate collapses into the first": [
        round_of(hit("a", TOWER, page=1), hit("a", TOWER.replace("総合", ""), page=2), hit("c", FUJI, page=1))
    ],
    "near-duplicate that disagrees stays apart": [
        round_of(hit("a", TOWER, page=1), hit("b", TOWER.replace("333", "334"), page=1))
    ],
    "disagreeing first copy, agreeing second": [
        round_of(
            hit("a", TOWER.replace("333", "334"), page=1),
            hit("b", TOWER, page=1),
            hit("c", TOWER.replace("総合", "大型"), page=1),
        )
    ],
    "snippet replaced by a better-scored copy before a near-duplicate arrives": [
        round_of(hit("a", TOWER, page=1, score=1.0), hit("a", TOWER.replace("総合", ""), page=1, score=3.0)),
        round_of(hit("b", TOWER.replace("総合", "").replace("公園", ""), page=5, score=2.0)),
    ],
    "a copy at the same place that disagrees is another version, before a near-duplicate arrives": [
        round_of(hit("a", TOWER, page=1, score=1.0), hit("a", TOWER.replace("333", "334"), page=1, score=3.0)),
        round_of(hit("b", TOWER.replace("333", "334").replace("総合", ""), page=5, score=2.0)),
        round_of(hit("a", TOWER.replace("333", "334"), page=1, score=0.5), hit("a", TOWER, page=1, score=0.4)),
    ],
    "no page nor chunk: location never merges": [
        round_of(hit("a", TOWER), hit("a", FUJI), hit("a", TOWER.replace("総合", "")))
    ],
    "empty and blank snippets": [round_of(hit("a", "", page=1), hit("b", "   ", page=1), hit("c", TOWER, page=1))],
    "short snippets": [round_of(hit("a", "東", page=1), hit("b", "東京", page=1), hit("c", "東京タ", page=1))],
    "three rounds of overlapping hits": [
        round_of(*(hit(f"d{i}", f"{TOWER[i:]}{FUJI[: i * 3]}", page=i, score=10 - i) for i in range(8)))
        for _ in range(3)
    ],
}


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
@pytest.mark.parametrize("case", list(CASES))
def test_the_pool_equals_the_per_hit_oracle(case: str, threshold: float) -> None:
    assert_same_pool(CASES[case], threshold)


snippets = st.text(alphabet="東京タワー高さ富士山ABCabc 。、0123", min_size=0, max_size=60)
hits = st.builds(
    hit,
    document_id=st.sampled_from(["d1", "d2", "d3"]),
    snippet=snippets,
    page=st.one_of(st.none(), st.integers(0, 3)),
    score=st.floats(0, 10),
    query=st.one_of(st.none(), st.sampled_from(["q1", "q2"])),
)


@settings(max_examples=200, deadline=None)
@given(
    rounds=st.lists(st.lists(hits, max_size=10), min_size=1, max_size=3),
    threshold=st.sampled_from([0.3, 0.5, 0.8, 0.95]),
)
def test_the_pool_equals_the_oracle_on_any_small_history(rounds: list[list[SearchHit]], threshold: float) -> None:
    # At most 30 hits: no text has more candidates than NEAR_DUP_MAX_COMPARED, so nothing may differ.
    assert_same_pool([round_of(*r) for r in rounds], threshold)


@pytest.mark.parametrize("snippet_chars", [150, 2_000])
def test_the_throughput_benchmark_history_equals_the_oracle(snippet_chars: int) -> None:
    """JSQuAD paragraphs ranked by BM25 (bench.librarian_throughput's 300 hits), plus edited copies of some."""
    body, _ = build_payload(0, snippet_chars)
    history = msgspec.json.decode(body, type=LibrarianRequest).search_history
    copies = [
        SearchHit(
            document_id=f"copy-{h.document_id}", page=h.page, snippet=h.snippet.replace("。", "、", 1), score=h.score
        )
        for h in history[0].results[::4]
    ]
    history = [*history, round_of(*copies)]
    pool = assert_same_pool(history, 0.8)
    assert len(pool.candidates) < sum(len(r.results) for r in history)  # the copies did collapse


def test_comparisons_stay_linear_where_the_oracle_is_quadratic() -> None:
    # Same statement, different figures: every pair is a near-duplicate that disagrees, so the oracle
    # compares each hit with every earlier candidate.
    history = [
        round_of(
            *(hit(f"d{i}", f"東京タワーの高さは{i}メートルで、港区にある電波塔である。", page=0) for i in range(400))
        )
    ]
    pool = build_pool(history, near_dup_threshold=0.8)
    oracle = oracle_pool(history, 0.8)
    assert oracle.comparisons == 400 * 399 // 2
    assert pool.near_dup_compared <= 32 * 400
    assert len(pool.candidates) == len(oracle.candidates) == 400  # and the same decision: all kept apart
