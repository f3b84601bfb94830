"""Forbidden phrases in every spelling (issue 13 item 11): spacing, width, script and kanji/kana variants.

The variants are built here, independently of the matcher's tables: spaces of every kind inserted at
every position, half-width katakana, katakana and hiragana spellings, and the kanji/kana spellings a
writer actually uses. Each must be caught by the validator (quoted as the seed names the phrase), and
the embedded engine must rephrase each one when it copies it from the dashboard.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.drafting.advisor import advisor_report
from graphs.proposal_quality.drafting.organizer import organizer_report
from graphs.proposal_quality.drafting.wording import FORBIDDEN, REPHRASE, neutral
from graphs.proposal_quality.forbidden_phrases import (
    _FOLD,
    _INVISIBLE,
    ARRAY_FROM_CHARS,
    KANJI_READINGS,
    comparable,
    find_forbidden,
    forbidden_in,
    forbidden_in_any,
)
from graphs.proposal_quality.forbidden_phrases import SPELLINGS as PHRASE_SPELLINGS
from graphs.proposal_quality.validator import (
    ADVISOR_FORBIDDEN,
    ORGANIZER_FORBIDDEN,
    validate_advisor_report,
    validate_organizer_report,
)
from tests.graphs.proposal_quality.samples import ADVISOR_SAMPLES, ORGANIZER_SAMPLES

SPACES = {
    "ascii": " ",
    "double": "  ",
    "ideographic": "\u3000",
    "tab": "\t",
    "newline": "\n",
    "crlf": "\r\n",
    "nbsp": "\u00a0",
    "narrow-nbsp": "\u202f",
    "em-space": "\u2003",
    "thin-space": "\u2009",
    "line-separator": "\u2028",
    "zero-width-space": "\u200b",
    "zwnj": "\u200c",
    "zwj": "\u200d",
    "word-joiner": "\u2060",
    "bom": "\ufeff",
    "soft-hyphen": "\u00ad",
    "variation-selector": "\ufe0f",
    "mixed": " \u3000\u200b\t\n",
}

SPELLINGS: dict[str, list[str]] = {
    "べき": ["可き", "ベキ", "ﾍﾞｷ"],
    "してください": ["して下さい", "為て下さい", "シテクダサイ", "ｼﾃｸﾀﾞｻｲ", "して下サイ"],
    "が必要です": ["がひつようです", "が必ようです", "がひつ要です", "が必要デス", "ｶﾞ必要ﾃﾞｽ"],
    "ベスト": ["べすと", "ﾍﾞｽﾄ", "ヘ゛スト", "ヘ\u3099スト", "ベ ス ト"],
    "推奨": ["すいしょう", "推しょう", "すい奨", "スイショウ", "推奬"],
    "正解": ["せいかい", "正かい", "セイカイ"],
    "すべき": ["為べき", "す可き", "するべき", "為るべき", "スベキ", "ｽﾍﾞｷ"],
}
"""Kanji, kana and width spellings of each phrase, as writers produce them."""

HALFWIDTH = {unicodedata.normalize("NFKC", chr(code)): chr(code) for code in range(0xFF66, 0xFF9E)}
VOICED = {"\u3099": "\uff9e", "\u309a": "\uff9f"}


def katakana(text: str) -> str:
    return "".join(chr(ord(ch) + 0x60) if "\u3041" <= ch <= "\u3096" else ch for ch in text)


def hiragana(text: str) -> str:
    return "".join(chr(ord(ch) - 0x60) if "\u30a1" <= ch <= "\u30f6" else ch for ch in text)


def halfwidth(text: str) -> str:
    """Katakana in half-width forms (voiced marks as separate half-width characters)."""
    return "".join(HALFWIDTH.get(ch, VOICED.get(ch, ch)) for ch in unicodedata.normalize("NFD", katakana(text)))


def spaced(phrase: str, space: str, at: int) -> str:
    return phrase[:at] + space + phrase[at:]


def variants(phrase: str) -> list[Any]:
    cases = [
        pytest.param(phrase, spaced(phrase, space, at), id=f"{phrase}-{name}-{at}")
        for name, space in SPACES.items()
        for at in range(1, len(phrase))
    ]
    cases += [
        pytest.param(phrase, form(phrase), id=f"{phrase}-{label}")
        for label, form in (("katakana", katakana), ("hiragana", hiragana), ("halfwidth", halfwidth))
        if form(phrase) != phrase
    ]
    cases += [pytest.param(phrase, text, id=f"{phrase}-spelled-{text}") for text in SPELLINGS[phrase]]
    return cases


ORGANIZER_CASES = [case for phrase in ORGANIZER_FORBIDDEN for case in variants(phrase)]
ADVISOR_CASES = [case for phrase in ADVISOR_FORBIDDEN for case in variants(phrase)]
ALL_CASES = ORGANIZER_CASES + ADVISOR_CASES


@pytest.mark.parametrize(("phrase", "text"), ORGANIZER_CASES)
def test_organizer_gate_catches_every_spelling(phrase: str, text: str) -> None:
    report = ORGANIZER_SAMPLES[2].fresh_report()
    report["summary"] = f"まず全体を見直します。{text}。"
    result = validate_organizer_report(report, ORGANIZER_SAMPLES[2].valid_ids)
    assert f"summary contains forbidden phrase '{phrase}' (e.g. べき, してください)" in result.errors


@pytest.mark.parametrize(("phrase", "text"), ADVISOR_CASES)
def test_advisor_gate_catches_every_spelling(phrase: str, text: str) -> None:
    report = ADVISOR_SAMPLES[0].fresh_report()
    report["options"][1]["risks"] = [f"この案は{text}とは言えない"]
    result = validate_advisor_report(report, ADVISOR_SAMPLES[0].valid_ids)
    assert f"options[1].risks[0] contains forbidden word '{phrase}' (e.g. ベスト, 推奨)" in result.errors


@pytest.mark.parametrize(("phrase", "text"), ALL_CASES)
def test_the_engine_rephrases_every_spelling_in_place(phrase: str, text: str) -> None:
    copied = neutral(f"前文{text}後文", 200)
    assert forbidden_in(copied, FORBIDDEN) is None
    assert copied.startswith("前文")
    assert copied.endswith("後文")


@pytest.mark.parametrize(("phrase", "text"), ALL_CASES[::7])
def test_engine_reports_quoting_any_spelling_pass_their_gate(phrase: str, text: str) -> None:
    board = Board.of([BoardNode(id="n1", title=f"{text}の整理、見直し", status=f"{text}中", tray="todo")])
    organizer = organizer_report(board, focus_id="n1", intent=f"{text}か知りたい")
    assert validate_organizer_report(organizer, board.valid_ids).ok
    advisor = advisor_report(board, focus_id="n1", intent=f"{text}か知りたい", notes=[text])
    assert validate_advisor_report(advisor, board.valid_ids).ok


@pytest.mark.parametrize(
    "text",
    [
        "推薦します",
        "正答を確かめる",
        "必要な情報",
        "ひつじ",
        "すいか",
        "水晶",
        "政界",
        "可決",
        "出来事",
        "見てください",
        "ベース",
        "ベル",
        "スイッチ",
        "しょうがない",
        "すぐやる",
        "下さる",
    ],
)
def test_ordinary_words_are_not_forbidden(text: str) -> None:
    assert forbidden_in(text, FORBIDDEN) is None


def test_every_phrase_has_readings_for_its_kanji_and_a_rephrasing() -> None:
    kanji = {ch for phrase in FORBIDDEN for ch in phrase if unicodedata.name(ch).startswith("CJK UNIFIED")}
    assert kanji <= set(KANJI_READINGS)
    assert set(FORBIDDEN) <= set(REPHRASE)


@pytest.mark.parametrize(
    ("text", "span"),
    [("これが推　奨です", "推　奨"), ("ここはして下さい", "して下さい"), ("確認するべき", "するべき"), ("ﾍﾞｽﾄ", "ﾍﾞｽﾄ")],
)
def test_find_locates_the_phrase_in_the_original_text(text: str, span: str) -> None:
    found = find_forbidden(text, ADVISOR_FORBIDDEN + ORGANIZER_FORBIDDEN)
    assert found is not None
    assert text[found.start : found.end] == span


def test_markers_are_compared_like_phrases() -> None:
    """The Should rules' markers (まず, 案/パターン/候補) use the same canonical form."""
    assert comparable("ﾊﾟﾀｰﾝ") == comparable("パターン")
    report = ADVISOR_SAMPLES[0].fresh_report()
    report["options"][0]["label"] = "ﾊﾟﾀｰﾝ A"
    assert validate_advisor_report(report, ADVISOR_SAMPLES[0].valid_ids).warnings == []


def _reference_comparable(text: str) -> str:
    """`comparable` as first written: NFKC, invisibles out, NFC, `translate` over the whole text, spellings."""
    folded = unicodedata.normalize("NFC", _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))).translate(_FOLD)
    for old, new in PHRASE_SPELLINGS:
        if old in folded:
            folded = folded.replace(old, new)
    return folded


@pytest.mark.parametrize("chunk_chars", [64, ARRAY_FROM_CHARS], ids=["regex-path", "array-path"])
def test_comparable_matches_its_reference_on_every_code_point(chunk_chars: int) -> None:
    """The fast paths (NFKC check, folding only the runs `_FOLD` rewrites, the arrays for long texts) change
    no character's form; the long chunks that reach beyond the BMP take the regex path."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(points), chunk_chars):
        chunk = "".join(points[start : start + chunk_chars])
        assert comparable(chunk) == _reference_comparable(chunk), hex(ord(chunk[0]))


_MIXED = st.sampled_from("ヘへベスト推奬すいしょうカタカナ下さい為るべき゛\u3099\u200b ﾍﾞｽﾄ漢字AＡa")


@given(st.one_of(st.text(alphabet=_MIXED), st.text(alphabet=_MIXED, min_size=ARRAY_FROM_CHARS)))
def test_comparable_matches_its_reference_on_mixed_text(text: str) -> None:
    """Runs of kana, kanji, marks, width forms and invisibles in any order, short or long: the same form."""
    assert comparable(text) == _reference_comparable(text)


_PIECE_CHARS = "ヘへベスト推奨すいしょう下さい為るべきしてくださ゛\u3099\u200b |ﾍﾞｽﾄ（）:A"
_PIECES = st.text(alphabet=st.sampled_from(_PIECE_CHARS), max_size=8)


@given(st.lists(_PIECES, max_size=6), st.sampled_from([ADVISOR_FORBIDDEN, ORGANIZER_FORBIDDEN]))
def test_one_pass_over_many_texts_finds_what_each_text_finds(texts: list[str], phrases: tuple[str, ...]) -> None:
    """Joined, no phrase is lost at a boundary (a mark after it, a separator inside) and none is made across one."""
    assert forbidden_in_any(texts, phrases) == any(forbidden_in(text, phrases) is not None for text in texts)


@given(
    st.lists(st.text(alphabet=st.sampled_from(_PIECE_CHARS), max_size=300), max_size=6),
    st.sampled_from([ADVISOR_FORBIDDEN, ORGANIZER_FORBIDDEN]),
)
def test_one_pass_over_long_texts_finds_what_each_text_finds(texts: list[str], phrases: tuple[str, ...]) -> None:
    """Joined texts past `ARRAY_FROM_CHARS` (the array path, the one NFKC check of the whole) find the same."""
    assert forbidden_in_any(texts, phrases) == any(forbidden_in(text, phrases) is not None for text in texts)


def test_a_phrase_split_over_two_texts_is_not_found() -> None:
    assert not forbidden_in_any(["推", "奨", "ベス", "\u200bト", "ヘ", "\u3099スト"], ADVISOR_FORBIDDEN)
    assert forbidden_in_any(["a", "推\u200b奨"], ADVISOR_FORBIDDEN)


def test_a_phrase_holding_the_separator_is_not_found_across_two_texts() -> None:
    # A caller's phrase may hold the join character: it must still be found text by text, never across two.
    assert not forbidden_in_any(["foo a", "b bar"], ["a|b"])
    assert forbidden_in_any(["x", "say a|b here"], ["a|b"])
