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
