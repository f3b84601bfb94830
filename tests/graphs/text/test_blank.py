"""`is_blank`: a caller's text with nothing visible in it is refused, whatever invisible characters it holds."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphs.text.blank as blank
from graphs.text.blank import blank_problems, is_blank


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        pytest.param(None, True, id="none"),
        pytest.param("", True, id="empty"),
        pytest.param(" \t\n\u3000", True, id="ascii-and-ideographic-space"),
        pytest.param("\u200b\ufeff\u200d", True, id="zero-width-and-bom"),
        pytest.param("\x00\x1f", True, id="control"),
        pytest.param("a", False, id="letter"),
        pytest.param(" \u200b東京 ", False, id="japanese-among-invisibles"),
        pytest.param("?", False, id="punctuation"),
    ],
)
def test_is_blank(text: str | None, blank: bool) -> None:
    assert is_blank(text) is blank


@given(st.text(st.characters(categories=("Zs", "Cc", "Cf")), max_size=20), st.text(min_size=1).filter(str.isalnum))
def test_one_visible_character_is_enough_wherever_it_stands(invisible: str, visible: str) -> None:
    assert is_blank(invisible)
    assert not is_blank(invisible + visible[0] + invisible)


def test_only_given_blank_fields_are_problems() -> None:
    problems = blank_problems([("$.a", None), ("$.b", " "), ("$.c", "x")])
    assert [p.path for p in problems] == ["$.b"]


def test_the_written_out_ranges_are_this_interpreters_control_and_format_characters() -> None:
    """A newer Unicode (a newer Python) may add format characters: this fails until the ranges say so."""
    for ranges, category in ((blank.CONTROL_CHARACTERS, "Cc"), (blank.FORMAT_CHARACTERS, "Cf")):
        written = {code for low, high in ranges for code in range(low, high + 1)}
        assert written == {code for code in range(0x110000) if unicodedata.category(chr(code)) == category}


@settings(deadline=None)
@given(st.text(max_size=40))
def test_without_invisible_spaces_controls_and_drops_format_characters(text: str) -> None:
    expected = "".join(
        " " if unicodedata.category(ch) == "Cc" else "" if unicodedata.category(ch) == "Cf" else ch for ch in text
    )
    assert blank.without_invisible(text) == expected
    assert blank.has_invisible(text) is any(blank.invisible(ch) for ch in text)


def test_the_written_out_format_ranges_are_unicode_14s() -> None:
    """What another interpreter's Unicode would compute instead, on this one: the written-out ranges."""
    assert blank._ranges_of("Cf") == blank.FORMAT_CHARACTERS
    assert blank._ranges_of("Cc") == blank.CONTROL_CHARACTERS
