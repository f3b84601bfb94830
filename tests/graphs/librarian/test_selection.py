"""The rules' evidence selection: which near-ties and which word-adding candidates are kept beside the best."""

from __future__ import annotations

from graphs.librarian.assessment import Assessment, ScoredCandidate
from graphs.librarian.candidates import Candidate
from graphs.librarian.question import profile_question
from graphs.librarian.selection import GAIN_SHARE, TIE_SHARE, select_minimal
from graphs.text.normalize import normalize


def _scored(page: int, relevance: float, covered: frozenset[str] = frozenset({"東京", "タワ"})) -> ScoredCandidate:
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
        covered_tokens=covered,
        elements=frozenset(),
    )


def _assessment(ranked: list[ScoredCandidate]) -> Assessment:
    return Assessment(
        ranked=ranked, sufficient=True, missing=[], covered_terms=[], token_weights={"東京": 1.0, "タワ": 1.0}
    )


def test_every_near_tie_is_kept_up_to_max_evidence() -> None:
    # Five candidates the rules cannot tell apart (every one within TIE_SHARE of the best), none adding a token:
    # all are returned up to max_evidence, the most relevant first (a cap on ties lost the 3rd and 4th).
    ranked = [_scored(page, 1.0 - 0.01 * page) for page in range(5)]
    assert all(s.relevance >= TIE_SHARE * ranked[0].relevance for s in ranked)
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=4)
    assert [s.candidate.page for s in selected] == [0, 1, 2, 3]


def test_a_word_adding_candidate_is_kept_only_when_relevant_in_its_own_right() -> None:
    # The best covers 東京 only; both others add タワ (half the question's weight) but are not near-ties.
    best = _scored(0, 1.0, frozenset({"東京"}))
    relevant = _scored(1, (GAIN_SHARE + TIE_SHARE) / 2, frozenset({"タワ"}))
    in_passing = _scored(2, 0.9 * GAIN_SHARE, frozenset({"タワ"}))
    profile = profile_question("東京タワー")
    assert [s.candidate.page for s in select_minimal(profile, _assessment([best, relevant]), max_evidence=5)] == [0, 1]
    assert [s.candidate.page for s in select_minimal(profile, _assessment([best, in_passing]), max_evidence=5)] == [0]


def test_a_clear_best_is_returned_alone() -> None:
    ranked = [_scored(0, 1.0), _scored(1, 0.9 * TIE_SHARE)]
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=5)
    assert [s.candidate.page for s in selected] == [0]
