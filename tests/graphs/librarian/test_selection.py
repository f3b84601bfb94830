"""The rules' evidence selection: which likely answers and which word-adding candidates are kept beside the best."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphs.librarian.selection as selection
from contracts.librarian import SearchHit, SearchRound
from graphs.librarian.assessment import Assessment, ScoredCandidate
from graphs.librarian.candidates import Candidate, hit_query, location, only_query
from graphs.librarian.question import profile_question
from graphs.librarian.selection import (
    ANSWER_PROBABILITY,
    GAIN_SHARE,
    SECOND_OPINION_SHARE,
    answer_probabilities,
    best_sentence_coverage,
    question_query_best,
    question_query_ranking,
    select_minimal,
)
from graphs.text.normalize import normalize
from graphs.text.tokenize import tokenize


def _scored(
    page: int,
    relevance: float,
    covered: frozenset[str] = frozenset({"東京", "タワ"}),
    snippet: str | None = None,
    document_id: str = "tower",
) -> ScoredCandidate:
    # Distinct passages (few shared tokens), so none counts as another version of the same statement.
    own = ["展望台", "電波塔", "港区", "夜景", "鉄骨"][page]
    text = snippet if snippet is not None else f"東京タワーの{own}"
    candidate = Candidate(
        cid=f"c{page + 1}",
        document_id=document_id,
        page=page,
        chunk_id=f"{document_id}#{page}",
        snippet=text,
        best_score=1.0,
        normalized=normalize(text),
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


def _probability(ranked: list[ScoredCandidate], page: int, history: list[SearchRound] | None = None) -> float:
    ranking = question_query_ranking(profile_question(QUESTION), history or [])
    return next(p for s, p in answer_probabilities(_assessment(ranked), ranking) if s.candidate.page == page)


def test_every_likely_answer_is_kept_up_to_max_evidence() -> None:
    # Five candidates the rules cannot tell apart, each likely enough to be the answer, none adding a token: all
    # are returned up to max_evidence, the likeliest first (a cap on ties lost the 3rd and 4th).
    ranked = [_scored(page, 1.0 - 0.01 * page) for page in range(5)]
    assert all(_probability(ranked, page) >= ANSWER_PROBABILITY for page in range(5))
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=4)
    assert [s.candidate.page for s in selected] == [0, 1, 2, 3]


def test_a_word_adding_candidate_is_kept_only_when_relevant_in_its_own_right(monkeypatch: pytest.MonkeyPatch) -> None:
    # The best covers 東京 only; both others add タワ (half the question's weight). With no candidate likely
    # enough to be kept as an answer, only the words rule decides: it wants relevance in its own right too.
    monkeypatch.setattr(selection, "ANSWER_PROBABILITY", 1.01)
    best = _scored(0, 1.0, frozenset({"東京"}))
    relevant = _scored(1, (GAIN_SHARE + 1.0) / 2, frozenset({"タワ"}))
    in_passing = _scored(2, 0.9 * GAIN_SHARE, frozenset({"タワ"}))
    profile = profile_question("東京タワー")
    assert [s.candidate.page for s in select_minimal(profile, _assessment([best, relevant]), max_evidence=5)] == [0, 1]
    assert [s.candidate.page for s in select_minimal(profile, _assessment([best, in_passing]), max_evidence=5)] == [0]


def test_a_clear_best_is_returned_alone() -> None:
    ranked = [_scored(0, 1.0), _scored(1, 0.6)]
    assert _probability(ranked, 1) < ANSWER_PROBABILITY
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=5)
    assert [s.candidate.page for s in selected] == [0]


def test_a_runner_up_that_states_the_question_in_one_sentence_is_likelier_than_one_that_scatters_it() -> None:
    # Same relevance and words; page 2 holds 東京 and タワ in two different sentences, page 1 in one.
    one = _scored(1, 0.9, snippet="東京タワーの展望台。港区にある。")
    scattered = _scored(2, 0.9, snippet="東京の港区。タワーの夜景。")
    weights = {"東京": 1.0, "タワ": 1.0}
    assert best_sentence_coverage(one, weights) == 1.0
    assert best_sentence_coverage(scattered, weights) == 0.5
    ranked = [_scored(0, 1.0), one, scattered]
    assert _probability(ranked, 1) >= ANSWER_PROBABILITY > _probability(ranked, 2)
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=5)
    assert [s.candidate.page for s in selected] == [0, 1]


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


def _ranking_every_round(question: str, history: list[SearchRound]) -> list[tuple[str, int | None, str | None]]:
    """The ranking by its definition: every round's hits sorted by query, then the query that shares most wins."""
    wanted = set(tokenize(question))
    best_share, best_hits = 0.0, []
    for round_ in history:
        only = only_query(round_)
        hits_of: dict[str, list[tuple[str, int | None, str | None]]] = {}
        for hit in round_.results:
            query = hit_query(hit, only)
            if query is not None and query in round_.queries_text:
                hits_of.setdefault(query, []).append(location(hit))
        for query in round_.queries_text:
            share = len(wanted & set(tokenize(query))) / len(wanted)
            if share > best_share and query in hits_of:
                best_share, best_hits = share, hits_of[query]
    return best_hits


_QUERIES = [
    "東京タワー 高さ",
    "東京タワーの展望台の高さは",
    "展望台",
    "高さ",
    "東京タワーの展望台の高さは何メートル",
    "スカイツリー",
]


@st.composite
def _histories(draw: st.DrawFn) -> list[SearchRound]:
    rounds = []
    for _ in range(draw(st.integers(0, 4))):
        queries = draw(st.lists(st.sampled_from(_QUERIES), max_size=3, unique=True))
        hits = [
            SearchHit(
                document_id=draw(st.sampled_from(["tower", "tree"])),
                page=draw(st.integers(0, 3)),
                snippet="…",
                score=1.0,
                metadata=draw(st.sampled_from([{}, *({"query": q} for q in _QUERIES)])),
            )
            for _ in range(draw(st.integers(0, 5)))
        ]
        rounds.append(SearchRound(queries_text=queries, results=hits))
    return rounds


@given(history=_histories())
@settings(max_examples=300, deadline=None)
def test_the_question_query_ranking_skips_only_rounds_that_cannot_win(history: list[SearchRound]) -> None:
    # A round none of whose queries shares more than the best so far is not sorted by query: the same ranking.
    assert question_query_ranking(profile_question(QUESTION), history) == _ranking_every_round(QUESTION, history)


def test_the_search_sides_ranking_makes_a_runner_up_likelier() -> None:
    # The same runner-up, not likely enough where the search side ranks the best first and it nowhere, is kept
    # where the search side ranks it first.
    ranked = [_scored(0, 1.0), _scored(1, 0.65)]
    agreed = [SearchRound(queries_text=["東京タワーの展望台の高さは"], results=[_hit(0, "東京タワーの展望台の高さは")])]
    assert _probability(ranked, 1, agreed) < ANSWER_PROBABILITY
    selected = select_minimal(profile_question(QUESTION), _assessment(ranked), max_evidence=5, history=agreed)
    assert [s.candidate.page for s in selected] == [0]
    disputed = [_round({"東京タワーの展望台の高さは": 1})]
    assert _probability(ranked, 1, disputed) >= ANSWER_PROBABILITY
    selected = select_minimal(profile_question(QUESTION), _assessment(ranked), max_evidence=5, history=disputed)
    assert [s.candidate.page for s in selected] == [0, 1]


def _hit(page: int, query: str) -> SearchHit:
    return SearchHit(
        document_id="tower", page=page, chunk_id=f"tower#{page}", snippet="…", score=1.0, metadata={"query": query}
    )


def test_where_the_search_side_disagrees_its_best_is_kept_before_the_others() -> None:
    # The search side's best for the question (page 2) is far from the rules' best, but it is a second judgement:
    # it is kept, before the others, so max_evidence cannot crowd it out.
    ranked = [_scored(0, 1.0), _scored(1, 0.95), _scored(2, SECOND_OPINION_SHARE + 0.01)]
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
    weak = [_scored(0, 1.0), _scored(2, GAIN_SHARE - 0.1)]
    assert [s.candidate.page for s in select_minimal(profile, _assessment(weak), max_evidence=5, history=disputed)] == [
        0
    ]


def test_the_search_sides_vote_breaks_a_near_tie() -> None:
    # Pages 0 and 1 score within a hair of each other: the one the search side ranks first for the question leads.
    ranked = [_scored(0, 1.0), _scored(1, 0.995)]
    history = [_round({"東京タワーの展望台の高さは": 1})]
    selected = select_minimal(profile_question(QUESTION), _assessment(ranked), max_evidence=5, history=history)
    assert selected[0].candidate.page == 1


def test_a_contradicting_source_is_kept_even_when_the_selection_is_full() -> None:
    # max_evidence 2 is filled by the best and a likely runner-up; a third source states the best's statement
    # with another figure. It takes the runner-up's place: the caller sees both versions, not one silently.
    ranked = [
        _scored(0, 1.0, snippet="東京タワーの高さは333メートルである。東京都港区にある電波塔。"),
        _scored(1, 0.99),
        _scored(2, 0.9, snippet="東京タワーの高さは334メートルである。東京都港区にある電波塔。"),
    ]
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=2)
    assert [s.candidate.page for s in selected] == [0, 2]
    assert selection.disagreements(selected)


def test_both_sides_of_a_disagreement_stay_when_another_contradiction_finds_no_room() -> None:
    first = "東京タワーの高さは333メートルである。東京都港区にある電波塔。"
    ranked = [
        _scored(0, 1.0, snippet=first),
        _scored(1, 0.95, snippet=first.replace("333", "334")),
        _scored(2, 0.9, snippet=first.replace("333", "335")),
    ]
    selected = select_minimal(profile_question("東京タワー"), _assessment(ranked), max_evidence=2)
    assert [s.candidate.page for s in selected] == [0, 1]


TOWER = "東京タワーの高さは{}メートルである。東京都港区にある電波塔。"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("tower", TOWER.format(333)), ("blog", TOWER.format(334))),
        # Each source names itself (a masthead): still one statement about one tower, with two figures. A rule
        # that read a document id found in its own text as the text's subject hid exactly this (withdrawn).
        (("日経", "日経: " + TOWER.format(333)), ("朝日", "朝日: " + TOWER.format(334))),
    ],
)
def test_sources_that_state_one_fact_with_other_figures_always_disagree(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    pair = [
        _scored(0, 1.0, snippet=first[1], document_id=first[0]),
        _scored(0, 1.0, snippet=second[1], document_id=second[0]),
    ]
    assert selection.disagreements(pair)


def test_why_relevant_counts_a_key_term_no_candidate_holds_as_not_covered() -> None:
    # Scoring gives a token no candidate holds no weight (it tells no candidate apart); told to the caller, the
    # share must not read "covers 100%" beside notes saying that term was not found.
    scored = _scored(0, 1.0, covered=frozenset({"東京", "タワ"}))
    weights = {"東京": 1.0, "タワ": 2.0, "家康": 0.0}
    assert selection.shown_coverage(scored, weights) == pytest.approx(3.0 / 5.0)
    assert selection.shown_coverage(scored, {"東京": 1.0, "タワ": 2.0}) == scored.coverage
    items = selection.group_evidence(profile_question(QUESTION), [scored], weights)
    assert items[0].why_relevant.startswith("covers 60% of the question's key content")
