"""The rules' evidence selection: how many near-ties are kept beside the best candidate."""

from __future__ import annotations

from graphs.librarian.assessment import Assessment, ScoredCandidate
from graphs.librarian.candidates import Candidate
from graphs.librarian.question import profile_question
from graphs.librarian.selection import TIE_SHARE, select_minimal
from graphs.text.normalize import normalize


def _scored(page: int, relevance: float) -> ScoredCandidate:
    # Distinct passages (few shared tokens), so none counts as another version of the same statement.
    own = ["展望台", "電波塔", "港区", "夜景", "鉄骨"][page]
    candidate = Candidate(
        cid=f"c{page + 1}",
        document_id="tower",
        page=page,
        chunk_id=f"tower#{page}",
        snippet=f"東京タワーの{own}",
        best_score=1.0,
        normalized=normalize(f"東京タワーの{own}"),
    )
    return ScoredCandidate(
        candidate=candidate,
        relevance=relevance,
        coverage=1.0,
        contiguity=1.0,
        covered_tokens=frozenset({"東京", "タワ"}),
        elements=frozenset(),
    )


def _assessment(ranked: list[ScoredCandidate]) -> Assessment:
    return Assessment(
        ranked=ranked, sufficient=True, missing=[], covered_terms=[], token_weights={"東京": 1.0, "タワ": 1.0}
    )


def test_at_most_two_near_ties_are_kept_the_most_relevant_first() -> None:
    # Five candidates the rules cannot tell apart (every one within TIE_SHARE of the best), none adding a token:
    # the best and the next two are returned, not all five.
    ranked = [_scored(page, 1.0 - 0.01 * page) for page in range(5)]
    assert all(s.relevance >= TIE_SHARE * ranked[0].relevance for s in ranked)
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=5)
    assert [s.candidate.page for s in selected] == [0, 1, 2]


def test_a_clear_best_is_returned_alone() -> None:
    ranked = [_scored(0, 1.0), _scored(1, 0.9 * TIE_SHARE)]
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=5)
    assert [s.candidate.page for s in selected] == [0]
