"""Finding the JSON in a model's reply: fences, prose around it, brackets inside strings."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs.llm import json_extract

if TYPE_CHECKING:
    from _typeshed import TraceFunction
from graphs.llm.json_extract import JsonKind, extract_json_text, unbalanced_json_tail


@pytest.mark.parametrize(
    ("reply", "want", "expected"),
    [
        pytest.param('{"a": 1}', None, '{"a": 1}', id="bare-object"),
        pytest.param('  \n{"a": 1}\n ', None, '{"a": 1}', id="surrounding-whitespace"),
        pytest.param("[1, 2]", None, "[1, 2]", id="bare-array"),
        pytest.param('```json\n{"a": 1}\n```', None, '{"a": 1}', id="json-fence"),
        pytest.param('```\n{"a": 1}\n```', None, '{"a": 1}', id="bare-fence"),
        pytest.param('```JSON {"a": 1} ```', None, '{"a": 1}', id="one-line-fence"),
        pytest.param('```json\n{"a": 1,\n```', None, '{"a": 1,', id="fence-with-truncated-body-kept-for-repair"),
        pytest.param('Sure! Here:\n{"a": {"b": [1, 2]}}\nHope that helps.', None, '{"a": {"b": [1, 2]}}', id="prose"),
        pytest.param('Here:\n```json\n{"a": 1}\n```\nDone.', None, '{"a": 1}', id="fence-not-whole-reply"),
        pytest.param('```json\n{"a": 1}\n```\n\n```json\n{"b": 2}\n```', None, '{"a": 1}', id="two-fences"),
        pytest.param('x {"s": "a } b { c"} y', None, '{"s": "a } b { c"}', id="braces-in-string"),
        pytest.param(r'{"s": "say \"}\" please"}', None, r'{"s": "say \"}\" please"}', id="escaped-quote"),
        pytest.param(r'{"s": "back\\"} tail', None, r'{"s": "back\\"}', id="escaped-backslash-before-quote"),
        pytest.param('{"a": 1} and {"b": 2}', None, '{"a": 1}', id="first-of-two"),
        pytest.param('use {curly} then {"a": 1}', None, '{"a": 1}', id="skips-non-json-balanced"),
        pytest.param('see [1] and [2]: {"a": 1}', "object", '{"a": 1}', id="citation-is-not-the-object"),
        pytest.param('{"a": [1]} then [2]', "array", "[1]", id="array-wanted"),
        pytest.param('{"a": 1]', None, None, id="mismatched"),
        pytest.param("{'a': 1}", None, "{'a': 1}", id="python-dict-for-repair"),
        pytest.param('{"a": [1, 2', None, None, id="truncated"),
        pytest.param('{"a": {"b": 1}, "c": [2', None, None, id="truncated-does-not-return-an-inner-fragment"),
        pytest.param("no json here", None, None, id="prose-only"),
        pytest.param("", None, None, id="empty"),
        pytest.param("```json\n```", None, None, id="empty-fence"),
    ],
)
def test_extract_json_text(reply: str, want: JsonKind | None, expected: str | None) -> None:
    assert extract_json_text(reply, want=want) == expected


@pytest.mark.parametrize(
    ("reply", "want", "expected"),
    [
        ('Here: {"a": [1, 2', None, '{"a": [1, 2'),
        ('```json\n{"a": "x', None, '{"a": "x'),
        ('[1, {"a": 2', None, '[1, {"a": 2'),
        ('[1, {"a": 2', "object", '{"a": 2'),
        ("nothing", None, None),
    ],
)
def test_unbalanced_json_tail(reply: str, want: JsonKind | None, expected: str | None) -> None:
    assert unbalanced_json_tail(reply, want=want) == expected


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
_json_objects = st.dictionaries(st.text(max_size=8), _json_values, max_size=5)
_prose = st.text(alphabet=st.characters(blacklist_characters='{}[]"`\\'), max_size=40)


@given(obj=_json_objects, before=_prose, after=_prose)
def test_object_in_prose_is_found_whatever_its_strings_contain(obj: dict[str, object], before: str, after: str) -> None:
    found = extract_json_text(f"{before}{json.dumps(obj)}{after}")
    assert found is not None
    assert json.loads(found) == obj


@given(obj=_json_objects, lang=st.sampled_from(["json", ""]))
def test_fenced_object_is_found(obj: dict[str, object], lang: str) -> None:
    found = extract_json_text(f"```{lang}\n{json.dumps(obj, indent=2)}\n```")
    assert found is not None
    assert json.loads(found) == obj


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param('{"a": [{"b": 1}], "c": 2,}', '{"a": [{"b": 1}], "c": 2,}', id="trailing-comma-not-inner"),
        pytest.param("{'a': {\"b\": 1}}", "{'a': {\"b\": 1}}", id="single-quotes-not-inner"),
        pytest.param('see {bad,} then {"ok": 1}', '{"ok": 1}', id="later-top-level-valid"),
    ],
)
def test_never_returns_a_fragment_of_a_malformed_object(reply: str, expected: str) -> None:
    assert extract_json_text(reply) == expected


# --- linear time: the search reads each character a bounded number of times ---------------------------


def _work(reply: str, want: JsonKind | None = None) -> int:
    """Lines executed inside `graphs.llm.json_extract` plus characters handed to the JSON decoder: the work done.

    Counted, not timed, so the test means the same on a loaded machine.
    """
    module_file = json_extract.__file__
    lines = 0
    decoded = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> TraceFunction | None:
        nonlocal lines
        if frame.f_code.co_filename != module_file:
            return None
        if event == "line":
            lines += 1
        return tracer

    real_is_json = json_extract._is_json

    def counting_is_json(text: str) -> bool:
        nonlocal decoded
        decoded += len(text)
        return real_is_json(text)

    previous = sys.gettrace()
    json_extract._is_json = counting_is_json
    sys.settrace(tracer)
    try:
        extract_json_text(reply, want=want)
    finally:
        sys.settrace(previous)
        json_extract._is_json = real_is_json
    return lines + decoded


@pytest.mark.parametrize(
    "hostile",
    [
        pytest.param(lambda n: "{" * n + "]", id="openers-then-a-wrong-closer"),
        pytest.param(lambda n: "{[" * n + "}", id="alternating-openers"),
        pytest.param(lambda n: "{ {} " * n + "]", id="closed-groups-inside-a-mismatch"),
        pytest.param(lambda n: '{"a": 1,}' * n, id="many-malformed-candidates"),
        pytest.param(lambda n: "```json\n" + " " * n + "x", id="fence-then-spaces"),
        pytest.param(lambda n: "[" * n + "{}" * n + "]" * n + "]", id="objects-deep-in-arrays"),
    ],
)
def test_work_grows_linearly_with_the_reply(hostile: Callable[[int], str]) -> None:
    small, large = _work(hostile(500), "object"), _work(hostile(4_000), "object")
    assert large <= 8 * small * 1.25, f"8x the input cost {large / small:.1f}x the work"


# The search before it was made linear (it restarted at every opening bracket after a mismatch), kept
# as the reference the linear one must agree with on well-formed replies.


def _reference_balanced_end(text: str, start: int) -> int:
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return -1
            if not stack:
                return i + 1
    return -2


def _reference_extract(reply: str, want: JsonKind | None) -> str | None:
    text = reply.strip()
    if not text:
        return None
    fenced = re.match(r"\A```[ \t]*(?:json5?|jsonc|JSON)?[ \t]*\n?(?P<body>.*?)\n?[ \t]*```\Z", text, re.DOTALL)
    if fenced is not None and not re.search(r"^[ \t]*```", fenced.group("body"), re.MULTILINE):
        return fenced.group("body").strip() or None
    openers = {"object": "{", "array": "[", None: "{["}[want]
    first_balanced: str | None = None
    resume_at = 0
    for start, ch in enumerate(text):
        if start < resume_at or ch not in openers:
            continue
        end = _reference_balanced_end(text, start)
        if end == -2:
            break
        if end == -1:
            continue
        candidate = text[start:end]
        try:
            msgspec.json.decode(candidate)
        except msgspec.DecodeError:
            if first_balanced is None:
                first_balanced = candidate
            resume_at = end
            continue
        return candidate
    return first_balanced


# Prose may hold brackets (balanced or not, e.g. `[1]` citations or a stray `{ ]`), but no quotes: a
# quote in prose starts a "string" that no scan can tell from a real one.
_bracketed_prose = st.text(alphabet=st.sampled_from("ab :,\n{}[]"), max_size=30)


def _replies(values: st.SearchStrategy[object]) -> st.SearchStrategy[str]:
    """Prose and JSON values, some pretty-printed, some followed by a comma (a malformed neighbour)."""
    pieces = st.one_of(
        _bracketed_prose,
        values.map(json.dumps),
        values.map(lambda value: json.dumps(value, indent=2)),
        values.map(lambda value: json.dumps(value) + ","),
    )
    return st.lists(pieces, min_size=1, max_size=5).map("".join)


def _values(text: st.SearchStrategy[str]) -> st.SearchStrategy[object]:
    return st.recursive(
        st.none() | st.booleans() | st.integers() | text,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
        max_leaves=12,
    )


@given(reply=_replies(_values(st.text(max_size=8))))
def test_finds_the_same_json_as_the_restarting_search(reply: str) -> None:
    assert extract_json_text(reply) == _reference_extract(reply, None)


@given(
    reply=_replies(_values(st.text(alphabet=st.characters(blacklist_characters="[]{}"), max_size=8))),
    want=st.sampled_from(["object", "array"]),
)
def test_finds_the_same_json_of_the_wanted_kind_as_the_restarting_search(reply: str, want: JsonKind) -> None:
    assert extract_json_text(reply, want=want) == _reference_extract(reply, want)


def test_a_bracket_inside_a_string_of_the_other_kind_is_read_as_text() -> None:
    """The one intended difference: the restarting search began a scan at the `[` inside `"["`, out of phase."""
    reply = '{"[": [1]}'
    assert _reference_extract(reply, "array") is None
    assert extract_json_text(reply, want="array") == "[1]"


@given(
    obj=_json_objects, lang=st.sampled_from(["json", "JSON", "jsonc", ""]), pad=st.sampled_from(["", " ", "\n", " \t"])
)
def test_fences_are_read_as_before(obj: dict[str, object], lang: str, pad: str) -> None:
    reply = f"```{pad}{lang}{pad}\n{json.dumps(obj, indent=2)}{pad}\n{pad}```"
    assert extract_json_text(reply) == _reference_extract(reply, None)
