"""Query planning (seed 003 §2.1): key terms for full-text, paraphrases for vectors, never re-issued, capped."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.librarian import MissingElement
from graphs.librarian.query_planning import plan_first, plan_follow_up
from graphs.librarian.question import profile_question
from graphs.text.normalize import normalize

QUESTION_WORDS = ("何", "どこ", "いつ", "誰", "ですか", "what", "which", "?", "？")


@pytest.mark.parametrize(
    ("question", "expected_term"),
    [
        ("東京タワーの高さは何メートルですか", "東京"),
        ("徳川家康が江戸幕府を開いたのは何年か", "江戸幕府"),
        ("ミトコンドリアとは何ですか", "ミトコンドリア"),
        ("What is the boiling point of water at sea level?", "boiling"),
    ],
)
def test_first_search_uses_key_terms_without_question_words(question: str, expected_term: str) -> None:
    plan = plan_first(profile_question(question), max_queries=4, issued=set())
    assert plan.queries_text, plan
    assert any(expected_term in q for q in plan.queries_text)
    for query in plan.queries_text:
        assert not any(w in normalize(query).split() or w in query for w in QUESTION_WORDS if len(w) > 1 or w in "?？")
    assert plan.queries_vector, "a natural-language paraphrase for pgvector"
    assert plan.rationale


def test_definition_questions_get_a_definition_query() -> None:
    plan = plan_first(profile_question("ミトコンドリアとは何ですか"), max_queries=6, issued=set())
    assert any("定義" in q for q in plan.queries_text)


@settings(max_examples=150)
@given(
    question=st.sampled_from(
        [
            "東京タワーの高さは何メートルですか",
            "梅雨がみられるのはどの期間？",
            "Why does ice float on water?",
            "光合成の仕組みと例",
        ]
    ),
    max_queries=st.integers(1, 8),
    issued_first=st.booleans(),
    missing=st.lists(
        st.builds(
            MissingElement,
            category=st.sampled_from(["term", "definition", "example"]),
            description=st.text(min_size=1, max_size=8),
        ),
        max_size=4,
    ),
)
def test_plans_never_reissue_and_respect_max_queries(
    question: str, max_queries: int, issued_first: bool, missing: list[MissingElement]
) -> None:
    profile = profile_question(question)
    first = plan_first(profile, max_queries=max_queries, issued=set())
    issued = {normalize(q) for q in (*first.queries_text, *first.queries_vector)} if issued_first else set()
    plan = plan_follow_up(profile, missing, max_queries=max_queries, issued=issued)
    queries = [*plan.queries_text, *plan.queries_vector]
    assert len(queries) <= max_queries
    normalized = [normalize(q) for q in queries]
    assert not set(normalized) & issued
    assert len(set(normalized)) == len(normalized)


# --- issue 13: hard cases ------------------------------------------------------------------------------

ENGLISH_FUNCTION_WORDS = {"how", "does", "do", "did", "is", "are", "what", "the", "of", "a", "an", "or", "and", "not"}


@pytest.mark.parametrize(
    "question",
    [
        "How does photosynthesis work?",
        "How do vaccines train the immune system?",
        "What is the capital of France or Spain?",
        "Which is heavier, iron or gold, and why?",
        "Why did the Roman Empire not survive?",
        "When was the Eiffel Tower built?",
    ],
)
def test_english_text_entries_are_content_terms_only(question: str) -> None:
    profile = profile_question(question)
    plans = [plan_first(profile, max_queries=8, issued=set())]
    plans.append(plan_follow_up(profile, [], max_queries=8, issued={q for p in plans for q in p.queries_text}))
    for plan in plans:
        for entry in plan.queries_text:
            words = entry.split()
            assert not ENGLISH_FUNCTION_WORDS & set(words), entry
            suffixes = {profile.suffix(c) for c in profile.required}
            assert all(word in normalize(question) or word in suffixes for word in words), entry  # no "es"


@pytest.mark.parametrize(
    ("question", "issued"),
    [
        ("東京タワーの高さは何メートルですか", {"タワー 東京", "メートル 東京"}),
        ("How does photosynthesis work?", {"work photosynthesis"}),
    ],
)
def test_a_permutation_of_an_issued_query_is_not_issued_again(question: str, issued: set[str]) -> None:
    keys = {" ".join(sorted(q.split())) for q in issued}
    profile = profile_question(question)
    for plan in (
        plan_first(profile, max_queries=8, issued=issued),
        plan_follow_up(profile, [], max_queries=8, issued=issued),
    ):
        for query in plan.queries_text + plan.queries_vector:
            assert " ".join(sorted(normalize(query).split())) not in keys, query


@pytest.mark.parametrize(
    "question", ["東京タワーの高さは何メートルですか", "富士山の高さは", "How does photosynthesis work?"]
)
def test_no_single_character_entries_and_no_question_copied_as_a_vector_query(question: str) -> None:
    profile = profile_question(question)
    issued: set[str] = set()
    for _ in range(10):
        plan = (
            plan_follow_up(profile, [], max_queries=4, issued=issued)
            if issued
            else plan_first(profile, max_queries=4, issued=issued)
        )
        for entry in plan.queries_text:
            assert any(len(word) >= 2 for word in entry.split()), entry
        for query in plan.queries_vector:
            assert normalize(query) != normalize(question), "a vector query must not merely copy the question"
            assert not query.startswith("an explanation of"), query
        issued |= {normalize(q) for q in plan.queries_text + plan.queries_vector}


@pytest.mark.parametrize(
    "question",
    [
        "梅雨がみられるのはどの期間？",
        "光合成の仕組みと葉緑体の役割を説明してください",
        "徳川家康が江戸幕府を開いたのは何年か",
    ],
)
def test_follow_ups_try_every_key_term_before_running_out(question: str) -> None:
    profile = profile_question(question)
    issued: set[str] = set(plan_first(profile, max_queries=2, issued=set()).queries_text)
    for _ in range(20):
        plan = plan_follow_up(profile, [], max_queries=2, issued=issued)
        if not plan.queries_text and not plan.queries_vector:
            break
        issued |= set(plan.queries_text) | set(plan.queries_vector)
    used = {word for q in issued for word in normalize(q).split()}
    assert {t for t in profile.key_terms if len(t) >= 2} <= used


@pytest.mark.parametrize(
    ("question", "asking"),
    [("光合成の具体例を教えてください", "具体例"), ("What is Newton's second law? Give an example.", "give")],
)
def test_words_that_ask_are_not_key_terms(question: str, asking: str) -> None:
    assert asking not in profile_question(question).key_terms


@pytest.mark.parametrize(
    ("question", "term", "with_question_word"),
    [
        ("日本共産党に入党するには党員何人の推薦が必要でしょうか。", "党員", "党員何人"),
        ("労働基本権は憲法何条か。", "憲法", "憲法何条"),
        ("社会党が新人候補を立てたケースは東京何区？", "東京", "東京何区"),
    ],
)
def test_a_question_word_inside_a_kanji_run_is_cut_out_of_the_key_terms(
    question: str, term: str, with_question_word: str
) -> None:
    # 「党員何人」 as a key term is a term no passage contains: reported missing, it sends the loop searching again.
    key_terms = profile_question(question).key_terms
    assert term in key_terms
    assert with_question_word not in key_terms


def test_a_word_that_contains_nan_is_not_cut() -> None:
    profile = profile_question("幾何学の起源は何？")
    assert "幾何学" in profile.key_terms
    assert "幾何学" in profile.stripped
