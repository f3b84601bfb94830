"""The extractive answer's work is bounded: it matches terms exactly as defined, yields, and stops at the deadline.

Issue 15 item 4: a long question of short terms over long hits and long user inputs kept the event
loop for seconds past the request's budget. These tests count the answer's yields and give it a spent
deadline; none of them times anything.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.grace import Evidence, UserInput
from graphs.errors import DeadlineExceeded
from graphs.grace.complexity import is_japanese
from graphs.grace.reasoning import (
    CHUNK_CHARS,
    MAX_SENTENCE_CHARS,
    MIN_SENTENCE_CHARS,
    SCAN_PER_LENGTH,
    Material,
    TermMatcher,
    _sentences,
    extractive_answer,
)
from graphs.text.normalize import normalize
from graphs.text.tokenize import tokenize
from tests.support.context import make_context

KANJI = "東京高山川海空雨風花"
LONG_QUERY = " ".join(a + b for a in KANJI for b in KANJI) + " " + " ".join(KANJI)
"""A legitimate but long question: 110 short Japanese terms."""


def hostile_material(copies: int) -> Material:
    """Long hits and long user inputs mentioning many of the question's terms: `copies` scales the input."""
    sentence = "".join(KANJI[i % 10] + KANJI[(i * 3) % 10] + "は" for i in range(60)) + "。"
    snippet = sentence * 8
    evidence = [Evidence(step_id=1, document_id=f"d{i}", snippet=snippet, score=0.5) for i in range(8 * copies)]
    inputs = [UserInput(step_id=2, text=sentence * 20) for _ in range(2 * copies)]
    return Material(evidence=evidence, user_inputs=inputs, context=[], groups=[1])


def expected_mentions(text: str, wanted: list[str]) -> frozenset[str]:
    """The definition: Japanese terms as substrings of the normalised text, other terms as whole tokens."""
    normalized = normalize(text)
    words = set(tokenize(normalized))
    return frozenset(t for t in wanted if (t in normalized if is_japanese(t) else t in words))


@given(
    st.lists(st.text(alphabet="東京高山タワーabc1", min_size=1, max_size=4), max_size=60),
    st.text(alphabet="東京高山タワーabc1 。.", max_size=80),
)
def test_the_matcher_finds_exactly_the_terms_the_definition_does(wanted: list[str], text: str) -> None:
    terms = [normalize(t) for t in wanted if normalize(t)]
    for scan_each in (True, False):  # both ways of finding Japanese terms
        matcher = TermMatcher(terms)
        matcher.scan_each = scan_each
        assert matcher.mentions(text) == expected_mentions(text, terms)


def test_a_long_question_of_short_terms_is_matched_by_length_not_term_by_term() -> None:
    terms = LONG_QUERY.split()
    matcher = TermMatcher(terms)
    assert len(matcher.by_length) == 2
    assert not matcher.scan_each  # 110 terms > SCAN_PER_LENGTH × 2 lengths: one pass per length instead
    assert len(terms) > SCAN_PER_LENGTH * 2
    text = "東京の高山は雨、川と海" * 30
    assert matcher.mentions(text) == expected_mentions(text, terms)


def test_a_long_answer_yields_to_the_event_loop_every_chunk() -> None:
    material = hostile_material(copies=2)
    chars = sum(len(e.snippet) for e in material.evidence) + sum(len(u.text) for u in material.user_inputs)
    yields = 0

    async def checkpoint() -> None:
        nonlocal yields
        yields += 1

    answer = asyncio.run(extractive_answer(LONG_QUERY, material, max_sentences=3, checkpoint=checkpoint))
    assert answer.self_eval > 0  # a real answer was chosen, not "no evidence"
    assert yields >= chars // CHUNK_CHARS


def test_a_spent_deadline_stops_the_answer() -> None:
    context = dataclasses.replace(make_context(), deadline=time.monotonic() - 1)
    material = hostile_material(copies=2)
    with pytest.raises(DeadlineExceeded):
        asyncio.run(extractive_answer(LONG_QUERY, material, max_sentences=3, checkpoint=context.checkpoint))


_LOOKBEHIND_BREAK = re.compile(r"(?<=[。！？!?])|(?<=[.;])\s+|\n+")


def _reference_sentences(text: str) -> list[str]:
    """The sentences as first cut: `re.split` on lookbehinds, each piece stripped, short ones dropped."""
    parts = (p.strip() for p in _LOOKBEHIND_BREAK.split(text))
    return [p[:MAX_SENTENCE_CHARS] for p in parts if len(p) >= MIN_SENTENCE_CHARS]


@given(st.text(alphabet=st.sampled_from("。！？!?.;\n\r\t \u3000\u00a0\u2028\x1c梅雨ab1")))
def test_sentences_are_cut_as_the_lookbehind_split_cuts_them(text: str) -> None:
    """Ends, whitespace of every kind and newlines in any order: the same sentences as the reference split."""
    assert _sentences(text) == _reference_sentences(text)


def test_a_long_sentence_is_cut_to_its_bound() -> None:
    text = "あ" * (MAX_SENTENCE_CHARS + 50) + "。 ok; fine. x\n\nlast one"
    assert _sentences(text) == _reference_sentences(text)
    assert _sentences(text)[0] == "あ" * MAX_SENTENCE_CHARS
