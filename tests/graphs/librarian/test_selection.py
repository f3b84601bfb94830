"""The rules' evidence selection: which near-ties and which word-adding candidates are kept beside the best."""

from __future__ import annotations

from contracts.librarian import SearchHit, SearchRound
from graphs.librarian.assessment import Assessment, ScoredCandidate
from graphs.librarian.candidates import Candidate
from graphs.librarian.question import profile_question
from graphs.librarian.selection import (
    DISPUTED_TIE_SHARE,
    GAIN_SHARE,
    SECOND_OPINION_SHARE,
    TIE_SHARE,
    question_query_best,
    select_minimal,
)
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


QUESTION = "東京タワーの展望台の高さは何メートルですか"


def _round(first_page_of: dict[str, int]) -> SearchRound:
    """One round whose every text query found the tower pages, the given page first (`metadata.query` says which)."""
    hits = [
        SearchHit(
            document_id="tower", page=page, chunk_id=f"tower#{page}", snippet="…", score=1.0, metadata={"query": q}
        )
        for q, first in first_page_of.items()
        for page in [first, *(p for p in range(3) if p != first)]
    ]
    return SearchRound(queries_text=list(first_page_of), results=hits)


def test_the_question_query_is_the_one_closest_to_the_question_wording() -> None:
    # The key terms share less of the question's wording than the question minus its question words.
    history = [_round({"東京タワー 高さ": 0, "東京タワーの展望台の高さは": 2})]
    assert question_query_best(profile_question(QUESTION), history) == ("tower", 2, "tower#2")
    # Without `metadata.query`, only a round with a single query says which query found a hit.
    unlabelled = SearchRound(
        queries_text=["東京タワー 高さ", "東京タワーの展望台の高さは"],
        results=[SearchHit(document_id="tower", page=1, snippet="…", score=1.0)],
    )
    assert question_query_best(profile_question(QUESTION), [unlabelled]) is None


def test_where_the_search_side_agrees_a_runner_up_below_the_tie_share_is_left_out() -> None:
    ranked = [_scored(0, 1.0), _scored(1, (DISPUTED_TIE_SHARE + TIE_SHARE) / 2)]
    agreed = [_round({"東京タワーの展望台の高さは": 0})]
    selected = select_minimal(profile_question(QUESTION), _assessment(ranked), max_evidence=5, history=agreed)
    assert [s.candidate.page for s in selected] == [0]


def test_where_the_search_side_disagrees_its_best_is_kept_and_the_ties_widen() -> None:
    # The search side's best for the question (page 2) is far from a tie, but it is a second judgement: it is
    # kept, before the ties, so max_evidence cannot crowd it out; and page 1 now counts as a tie.
    ranked = [
        _scored(0, 1.0),
        _scored(1, (DISPUTED_TIE_SHARE + TIE_SHARE) / 2),
        _scored(2, SECOND_OPINION_SHARE + 0.01),
    ]
    disputed = [_round({"東京タワーの展望台の高さは": 2})]
    profile = profile_question(QUESTION)
    selected = select_minimal(profile, _assessment(ranked), max_evidence=5, history=disputed)
    assert [s.candidate.page for s in selected] == [0, 2, 1]
    assert [
        s.candidate.page for s in select_minimal(profile, _assessment(ranked), max_evidence=2, history=disputed)
    ] == [0, 2]
    assert [
        s.candidate.page for s in select_minimal(profile, _assessment(ranked), max_evidence=1, history=disputed)
    ] == [0]
    # A search-side best that is barely relevant by the rules is not a second opinion worth a snippet.
    weak = [_scored(0, 1.0), _scored(2, SECOND_OPINION_SHARE - 0.1)]
    assert [s.candidate.page for s in select_minimal(profile, _assessment(weak), max_evidence=5, history=disputed)] == [
        0
    ]


def test_the_search_sides_vote_breaks_a_near_tie() -> None:
    # Pages 0 and 1 score within a hair of each other: the one the search side ranks first for the question leads.
    ranked = [_scored(0, 1.0), _scored(1, 0.995)]
    history = [_round({"東京タワーの展望台の高さは": 1})]
    selected = select_minimal(profile_question(QUESTION), _assessment(ranked), max_evidence=5, history=history)
    assert selected[0].candidate.page == 1
