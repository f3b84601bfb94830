"""Dedup into the candidate pool (seed 003 §2.3): exact and near duplicates collapse, nothing is invented."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.librarian import SearchHit
from graphs.librarian.candidates import build_pool, stands_in
from tests.graphs.librarian.helpers import hit, round_of

TOWER = (
    "東京タワーは東京都港区芝公園にある総合電波塔で、高さは333メートルである。1958年12月23日に竣工した。"
    "完成当時は自立式鉄塔として世界一の高さを誇り、現在も東京のシンボルとして多くの観光客が訪れる。"
)


def test_same_location_collapses_keeping_best_score_and_every_query() -> None:
    pool = build_pool(
        [
            round_of(hit("doc", TOWER, page=1, score=2.0, query="東京タワー"), queries=["東京タワー"]),
            round_of(hit("doc", TOWER, page=1, score=5.0, query="高さ"), queries=["高さ"]),
        ],
        near_dup_threshold=0.8,
    )
    assert len(pool.candidates) == 1
    only = pool.candidates[0]
    assert only.best_score == 5.0
    assert only.queries == ["東京タワー", "高さ"]
    assert only.rounds == [0, 1]


def test_same_text_elsewhere_is_an_exact_duplicate() -> None:
    pool = build_pool([round_of(hit("a", TOWER, page=1), hit("b", "  " + TOWER.upper() + " "))], near_dup_threshold=0.8)
    assert len(pool.candidates) == 1
    assert pool.candidates[0].merged == [("b", None, None)]


def test_near_duplicates_collapse_and_distinct_texts_do_not() -> None:
    near = TOWER.replace("多くの", "大勢の")
    other = "富士山は静岡県と山梨県にまたがる活火山で、標高は3776メートルである。"
    pool = build_pool(
        [round_of(hit("a", TOWER, page=1), hit("a", near, page=2), hit("c", other, page=1))], near_dup_threshold=0.8
    )
    assert [c.document_id for c in pool.candidates] == ["a", "c"]
    assert pool.candidates[0].pages == [1, 2]


def test_threshold_is_respected() -> None:
    near = TOWER.replace("1958年", "昭和33年")
    strict = build_pool([round_of(hit("a", TOWER, page=1), hit("a", near, page=2))], near_dup_threshold=0.99)
    assert len(strict.candidates) == 2


snippets = st.text(alphabet="東京タワー高さ富士山河川ABCabc 。、0123", min_size=1, max_size=60)
hits = st.builds(
    hit,
    document_id=st.sampled_from(["d1", "d2", "d3"]),
    snippet=snippets,
    page=st.one_of(st.none(), st.integers(0, 3)),
    score=st.floats(0, 10),
)


@settings(max_examples=100)
@given(rounds=st.lists(st.lists(hits, max_size=8), min_size=1, max_size=3))
def test_pool_only_holds_what_the_history_holds(rounds: list[list[SearchHit]]) -> None:
    history = [round_of(*r) for r in rounds]
    pool = build_pool(history, near_dup_threshold=0.8)
    seen = {(h.document_id, h.snippet) for r in history for h in r.results}
    pages = {(h.document_id, h.page) for r in history for h in r.results}
    for candidate in pool.candidates:
        assert (candidate.document_id, candidate.snippet) in seen
        assert all((candidate.document_id, p) in pages for p in candidate.pages)
    assert len(pool.candidates) <= sum(len(r.results) for r in history)
    # Re-deriving the pool from the same history gives the same pool (any instance, any call).
    again = build_pool(history, near_dup_threshold=0.8)
    assert [(c.cid, c.document_id, c.snippet) for c in again.candidates] == [
        (c.cid, c.document_id, c.snippet) for c in pool.candidates
    ]


@pytest.mark.parametrize(
    ("excerpt", "text", "stands"),
    [
        ("大人には安全である。", "この薬は子供には安全ではない。大人には安全である。", True),
        ("この薬は大人には安全である", "この薬は大人には安全である。", True),
        ("この薬は大人には安全である", "この薬は大人には安全であるとは言えない。", False),  # cut before its negation
        ("東京タワーの高さは333メートル", "東京タワーの高さは333メートルではない。", False),
        ("安全である。", "この薬は不安全である。", False),  # not from a sentence's start
        ("it is safe.", "for adults it is safe. for children it is not.", True),  # after a space
        ("", "anything", False),
    ],
)
def test_an_excerpt_stands_in_a_text_only_as_whole_sentences(excerpt: str, text: str, stands: bool) -> None:
    assert stands_in(excerpt, text) is stands
