"""`guarded` patterns match exactly where the originals do, and the answer-type patterns are the guarded kind."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.config_files import read_typed
from graphs.librarian.question import AnswerType, _AnswerTypeSpec, answer_type_cues, states_answer_type
from graphs.text.first_chars import any_of, guarded

# CJK, digits (ASCII and full-width), letters of both cases, spaces, a newline and the classes' own specials.
ALPHABET = "年月日国語島地方大陸一二三十明治か4219０abcxyzABCfoo -]^\\\n.。"

PATTERNS = [
    r"\d+\s*(?:年|月|日)|[一二三十]+(?:月)|(?:明治)|から.{1,12}(?:まで)|\b(?:1\d{3}|20\d{2})\b|\b(?:may|march)\b",
    r"\d|[一二三十]+(?:つ|月)",
    r"[都道府県]|国(?!語)|島|地方|\b(?:city|state)\b",
    r"\bfoo",
    r"(?<=x)y|(?<!a)b+c",
    r"(a)\1|(?P<n>[xy])(?P=n)",
    r"(?:x|)y",
    r"x?y*z",
    r"[a-c\d\-\]]+z",
    r"(?>ab)c|a++b",
    r"a{0}b|\s+年",
    r"(?:年|)",  # can match empty: left as it is
    r"a*",
    r".bc|d",
    r"[^x]y|z",
    r"(?i)abc|年",
    r"(?i:x)y|z",
    r"abc|年",  # starts with literals only: `re` already skips, left as it is
    r"[xy]z",
    r"^年|月$",
    r"(?=年)年月|\B月",
]


@pytest.mark.parametrize("source", PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=40))
def test_a_guarded_pattern_matches_exactly_where_the_original_does(source: str, text: str) -> None:
    original = re.compile(source)
    fast = guarded(original)
    first, second = original.search(text), fast.search(text)
    assert (first and (first.span(), first.groups())) == (second and (second.span(), second.groups()))
    assert [(m.span(), m.groups()) for m in original.finditer(text)] == [
        (m.span(), m.groups()) for m in fast.finditer(text)
    ]


@pytest.mark.parametrize(
    ("source", "changed"),
    [
        (r"\d+年|[一二]+月", True),
        (r"\bfoo|\d", True),
        (r"a*", False),  # matches the empty string at every position
        (r".bc|d", False),  # `.` starts a match with any character
        (r"[^x]y", False),
        (r"(?i)abc|\d", False),  # case-insensitive: the first characters are not the ones written
        (r"abc|年", False),  # `re` has its own skip for literal starts
        (r"(a)\1|\d", True),
        (r"(a)?(?(1)b|c)", False),  # a conditional after an optional group: not read
    ],
)
def test_which_patterns_are_guarded(source: str, changed: bool) -> None:
    original = re.compile(source)
    assert (guarded(original) is not original) == changed


def test_the_answer_type_patterns_are_loaded_guarded() -> None:
    # The point of the guard: these alternations are searched in every snippet of every Librarian step.
    raw = read_typed(
        resources.files("graphs.librarian").joinpath("answer_types.yaml"), dict[AnswerType, _AnswerTypeSpec]
    )
    loaded = answer_type_cues()
    for name, spec in raw.items():
        assert loaded[name].evidence.pattern == guarded(re.compile(spec.evidence)).pattern


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=ALPHABET, max_size=40),
    chosen=st.lists(st.sampled_from(PATTERNS[:3] + PATTERNS[4:5] + PATTERNS[7:12]), min_size=1, max_size=4),
)
def test_any_of_matches_exactly_when_one_of_the_patterns_does(text: str, chosen: list[str]) -> None:
    patterns = [guarded(re.compile(source)) for source in chosen]
    either = any_of(patterns)
    expected = any(pattern.search(text) for pattern in patterns)
    if either is None:  # only patterns with groups are left apart here
        assert any(pattern.groups for pattern in patterns)
    else:
        assert (either.search(text) is not None) == expected


@pytest.mark.parametrize(
    "sources",
    [
        [],
        [r"(a)\1", r"\d"],  # a group: the second pattern's numbers would move
        [r"(?i)abc", r"\d"],  # a global flag, no longer first
    ],
)
def test_patterns_that_do_not_combine_unchanged_are_left_apart(sources: list[str]) -> None:
    assert any_of([re.compile(source) for source in sources]) is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=60), data=st.data())
def test_states_answer_type_is_any_kind_searched_alone(text: str, data: st.DataObject) -> None:
    cues = answer_type_cues()
    wanted = tuple(data.draw(st.lists(st.sampled_from(sorted(cues)), min_size=1, max_size=3, unique=True)))
    expected = any(cues[kind].evidence.search(text) for kind in wanted)
    assert states_answer_type(text, wanted) == expected


@pytest.mark.parametrize(
    ("source", "flags", "text"),
    [
        (r"(?u:\w)+x", re.ASCII, "éx"),  # a Unicode class inside an ASCII pattern: wider than a guard of it
        (r"(?i:a)b|\d", 0, "Ab"),  # a group's own case rule
        (r"(?a:\d)x|年", 0, "1x"),  # a group's own charset rule
    ],
)
def test_a_group_with_its_own_flags_is_left_unguarded(source: str, flags: int, text: str) -> None:
    original = re.compile(source, flags)
    assert guarded(original) is original
    assert guarded(original).search(text) is not None


def test_patterns_with_flags_of_their_own_are_left_apart() -> None:
    # The joined pattern is compiled without flags: re.I would be lost and "abc" missed.
    assert any_of([re.compile("ABC", re.IGNORECASE), re.compile(r"\d")]) is None
    assert any_of([re.compile("^a", re.MULTILINE)]) is None
