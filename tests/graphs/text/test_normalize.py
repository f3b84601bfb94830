"""`normalize` is exactly: invisible characters out, NFKC, each character lower-cased, NFKC again, collapsed whitespace.

However it is computed. Lower-casing is character by character, as PostgreSQL's `lower()` and Go's `ToLower` fold
the chunks the Librarian's terms are searched in.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.text.normalize import _COMPATIBILITY_CHARS, _COMPATIBILITY_RANGES, normalize, normalize_many

_WHITESPACE = re.compile(r"\s+")


def definition(text: str) -> str:
    categories = {"Cc": " ", "Cf": ""}
    visible = "".join(categories.get(unicodedata.category(ch), ch) for ch in text)
    nfkc = unicodedata.normalize("NFKC", visible)
    lowered = "".join("i" if ch == "İ" else ch.lower() for ch in nfkc)  # each character's own lower case
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", lowered)).strip()


# Full- and half-width forms, half-width katakana with their sound marks, combining marks, letterlike
# symbols, Latin-1 and ordinary Japanese: the characters the fast path rewrites, and their neighbours.
TRICKY = (
    "（）％℃：！＝～…２Ａａｶﾞﾟｰ･\u3000\xa0\u00bd\u00e9e\u0301\u0308\u3099\u309aカが東京タワーßİﬁ①ⅻ㍉ABCabc 。、\t\n"
    "ΣΟ\x00\x07\u200b\u200d\ufeff\xad"  # final sigma; controls and format characters
)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=40))
def test_normalize_equals_its_definition_on_tricky_text(text: str) -> None:
    assert normalize(text) == definition(text)


@settings(deadline=None)  # a loaded machine must not fail it on time
@given(st.text(max_size=40))
def test_normalize_equals_its_definition_on_any_text(text: str) -> None:
    assert normalize(text) == definition(text)


def test_every_rewritten_character_alone_and_before_a_combining_mark() -> None:
    for code in [*range(0xA0, 0x100), *range(0x2000, 0x2190), 0x3000, *range(0xFF00, 0xFFF0)]:
        for text in (chr(code), f"a{chr(code)}\u0301\u3099", f"{chr(code)}{chr(code)}"):
            assert normalize(text) == definition(text), hex(code)


def test_every_whitespace_character_collapses_as_the_regex_does() -> None:
    """`normalize` splits with `str.split()`: it must cut at exactly the characters `\\s` matches, nowhere else."""
    spaces = [chr(c) for c in range(0x110000) if _WHITESPACE.fullmatch(chr(c)) or chr(c).isspace()]
    assert len(spaces) > 20  # the ASCII ones, NEL, NBSP, the Unicode spaces, line and paragraph separators
    for space in spaces:
        for text in (space, f"a{space}b", f"{space}a{space}{space}b{space}", f"東京{space}\u3000タワー{space}"):
            assert normalize(text) == definition(text), hex(ord(space))
    # Format characters that look like spaces but are not whitespace join (zero width space, word joiner, BOM).
    for other in ("\u200b", "\u180e", "\u2060", "\ufeff"):
        assert normalize(f"a{other}b") == definition(f"a{other}b") == "ab"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=TRICKY, max_size=30), max_size=8))
def test_normalize_many_equals_normalize_text_by_text_on_tricky_text(texts: list[str]) -> None:
    assert normalize_many(texts) == [normalize(text) for text in texts]


@settings(deadline=None)
@given(st.lists(st.text(max_size=30), max_size=8))
def test_normalize_many_equals_normalize_text_by_text_on_any_text(texts: list[str]) -> None:
    assert normalize_many(texts) == [normalize(text) for text in texts]


def test_no_rewritten_character_becomes_another_that_would_be_rewritten() -> None:
    # Why `normalize_many` may replace a text's rewritten characters one after another: the NFKC form of one
    # never holds another character of the class whose own NFKC form differs.
    rewritten = [chr(code) for low, high in _COMPATIBILITY_RANGES for code in range(low, high + 1)]
    for char in rewritten:
        for inner in unicodedata.normalize("NFKC", char):
            if _COMPATIBILITY_CHARS.fullmatch(inner):
                assert unicodedata.normalize("NFKC", inner) == inner, (char, inner)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hauptstraße", "hauptstraße"),  # PostgreSQL's lower() keeps ß; casefold's ss would find nothing there
        ("ΟΔΟΣ", "οδοσ"),  # each character on its own: no final sigma
        ("İstanbul", "istanbul"),  # not i + combining dot
        ("梅雨\x00がみられる", "梅雨 がみられる"),  # a control character separates (NUL cannot reach PostgreSQL)
        ("東京\u200bタワー\ufeff", "東京タワー"),  # a format character is nothing
        ("\x07\u200b", ""),
    ],
)
def test_search_terms_fold_as_the_search_side_folds(text: str, expected: str) -> None:
    assert normalize(text) == expected
    assert normalize_many([text, "x"]) == [expected, "x"]


def test_every_character_alone_normalizes_as_defined() -> None:
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        assert normalize(char) == definition(char), hex(code)
        assert normalize(normalize(char)) == normalize(char), hex(code)
