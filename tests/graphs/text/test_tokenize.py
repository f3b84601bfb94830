"""Normalisation and tokenisation: tables for Japanese and English, properties, and BM25 recall on JSQuAD."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from graphs.text.normalize import normalize
from graphs.text.tokenize import (
    cjk_code_points,
    content_tokens,
    is_cjk_char,
    is_function_token,
    term_postings,
    terms,
    terms_of_many,
    tokenize,
)
from tests.support.jsquad import JsquadSet

CJK = re.compile(r"[\u3005-\u3007\u303b\u3041-\u309f\u30a1-\u30ff\u31f0-\u31ff\u3400-\u9fff\uf900-\ufaff]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Tokyo\tTower \n", "tokyo tower"),
        ("Ｔｏｋｙｏ　ＴＯＷＥＲ", "tokyo tower"),  # full-width letters and ideographic space
        ("ﾀﾜｰ", "タワー"),  # half-width katakana
        ("Straße", "straße"),  # lower-cased as PostgreSQL's lower() does, not case-folded to ss
        ("①２３", "123"),
        ("", ""),
        (" \u3000\n ", ""),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "東京タワーの高さは何メートルですか",
            [
                "東京",
                "京タ",
                "タワ",
                "ワー",
                "ーの",
                "の高",
                "高さ",
                "さは",
                "は何",
                "何メ",
                "メー",
                "ート",
                "トル",
                "ルで",
                "です",
                "すか",
            ],
        ),
        ("2024年", ["2024", "年"]),  # digits are a word, the lone kanji a unigram
        ("日本、東京。", ["日本", "東京"]),  # punctuation splits runs and is dropped
        ("ｶﾀｶﾅ", ["カタ", "タカ", "カナ"]),
        ("関ヶ原", ["関ヶ", "ヶ原"]),
        ("GPT-4o は 2.5 倍速い", ["gpt", "4o", "は", "2.5", "倍速", "速い"]),
        ("", []),
        ("。、！？", []),
    ],
)
def test_tokenize_japanese(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is the height of Tokyo Tower?", ["what", "is", "the", "height", "of", "tokyo", "tower"]),
        ("It's 333 m tall (version 2.5.1)!", ["it", "s", "333", "m", "tall", "version", "2.5.1"]),
        ("snake_case and kebab-case", ["snake", "case", "and", "kebab", "case"]),
        ("Café naïve ÉCOLE", ["café", "naïve", "école"]),
        ("--- *** ...", []),
    ],
)
def test_tokenize_english(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("東京タワーの高さは何メートルですか", ["東京", "タワー", "高", "メートル"]),
        ("関ヶ原の戦いは何年に起きましたか？", ["関ヶ原", "戦", "起"]),
        ("誰がアメリカ大統領になったのはいつですか", ["アメリカ", "大統領"]),
        ("日本で一番高い山はどこですか", ["日本", "一番高", "山"]),
        ("何県にありますか", []),  # 何 + counter is a question word too
        ("すごーい", []),  # hiragana only; the stray ー is not a katakana term
        ("東京と東京タワー", ["東京", "タワー"]),  # duplicates removed, first occurrence kept
        ("What is the height of Tokyo Tower in 2024?", ["height", "tokyo", "tower", "2024"]),
        ("How does the cache evict entries?", ["cache", "evict", "entries"]),
        ("Python 3.11 と msgspec", ["python", "3.11", "msgspec"]),
        ("", []),
    ],
)
def test_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [("です", True), ("の", True), ("the", True), ("東京", False), ("タワ", False), ("tower", False), ("ーの", False)],
)
def test_is_function_token(token: str, expected: bool) -> None:
    assert is_function_token(token) is expected


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(st.text())
def test_tokenize_never_raises_and_yields_clean_tokens(text: str) -> None:
    for token in tokenize(text):
        assert token
        assert not any(ch.isspace() for ch in token)
        if CJK.search(token):
            assert len(token) <= 2


@given(st.text())
def test_terms_are_distinct_substrings_of_the_normalised_text(text: str) -> None:
    found = terms(text)
    assert len(found) == len(set(found))
    normalized = normalize(text)
    assert all(term in normalized for term in found)


@given(st.text())
def test_tokenize_is_stable_under_normalisation(text: str) -> None:
    assert tokenize(normalize(text)) == tokenize(text)


# Texts built to sit on the boundaries terms_of_many relies on: newlines inside a text, combining marks and
# half-width voiced marks at either end (they must not compose across the separator), full-width and
# case-folded forms, every term class and the words terms drops.
_BOUNDARY_ALPHABET = st.sampled_from(
    [
        "\n",
        "\r\n",
        " ",
        "\u3000",
        "\u0301",
        "\u3099",
        "ﾞ",
        "ｶ",
        "ﾃｽﾄ",
        "東京",
        "何県",
        "ヶ",
        "ー",
        "すごーい",
        "の",
        "Ｔｏｋｙｏ",
        "ß",
        "the",
        "3.14",
        "2.5.1",
        "a_b",
        "\ud800",
        "、",
        "タワー",
        "\u2028",
        "\x85",
    ]
)
_BOUNDARY_TEXT = st.lists(_BOUNDARY_ALPHABET, max_size=8).map("".join)


@given(st.lists(st.one_of(st.text(), _BOUNDARY_TEXT), max_size=12))
def test_terms_of_many_is_terms_text_by_text(texts: list[str]) -> None:
    assert terms_of_many(texts) == [terms(text) for text in texts]


@given(st.lists(st.one_of(st.text(), _BOUNDARY_TEXT), max_size=12))
def test_term_postings_is_terms_of_many_inverted(texts: list[str]) -> None:
    expected: dict[str, list[int]] = {}
    for index, found in enumerate(terms_of_many(texts)):
        for term in found:
            expected.setdefault(term, []).append(index)
    postings = term_postings(texts, range(len(texts)))
    assert list(postings.items()) == list(expected.items())  # the same terms, in the same order


def test_term_postings_lists_each_text_once_per_term_and_drops_what_terms_drops() -> None:
    texts = ["東京タワーと東京駅と東京", "the 何県 東京", "", "どこ いつ the cache"]
    assert term_postings(texts, "abcd") == {"東京": ["a", "b"], "タワー": ["a"], "東京駅": ["a"], "cache": ["d"]}


def test_terms_of_many_keeps_texts_apart() -> None:
    # A text ending in a kana and the next starting with a voiced mark stay two texts with their own terms.
    expected = [["東京", "カ"], ["タワー", "高"], [], ["cache"]]
    assert terms_of_many(["東京ｶ", "ﾞタワー\n高さ", "", "the cache"]) == expected
    assert terms_of_many([]) == []


def test_lone_surrogates_do_not_raise() -> None:
    # JSON may carry them ("\\ud800"); they are not word characters, so they split runs and vanish.
    assert tokenize("東\ud800京 a\udfffb") == ["東", "京", "a", "b"]
    assert terms("東京\ud800タワー") == ["東京", "タワー"]


def test_bm25_over_tokenize_recalls_jsquad_paragraphs(jsquad_full: JsquadSet) -> None:
    """One-shot BM25 over the 1,145 JSQuAD paragraphs; measured R@5 = 0.96 on this sample (reference: 0.95)."""
    assert len(jsquad_full.chunks) == 1145
    sample = random.Random(0).sample(jsquad_full.questions, 200)

    index = BM25Okapi([tokenize(c.text) for c in jsquad_full.chunks])
    hits = 0
    for question in sample:
        top5 = np.argsort(-index.get_scores(tokenize(question.text)))[:5]
        hits += int(question.gold in top5)

    assert hits / len(sample) >= 0.93


@given(st.text(alphabet=st.sampled_from("あいうえおかゝゞゟーアイウ東京高山 .,3abcTheＴｏｋｙｏﾀﾜｰ\n")))
def test_content_tokens_are_the_tokens_that_are_not_function_tokens(text: str) -> None:
    assert content_tokens(text) == {t for t in tokenize(text) if not is_function_token(t)}


def test_cjk_code_points_agrees_with_is_cjk_char_on_every_code_point() -> None:
    points = np.arange(0x110000, dtype=np.uint32)
    expected = np.fromiter((is_cjk_char(chr(c)) for c in range(0x110000)), dtype=bool, count=0x110000)
    assert np.array_equal(cjk_code_points(points), expected)
    assert expected.sum() > 20_000  # the class is not empty: kanji, kana and the astral kanji planes
