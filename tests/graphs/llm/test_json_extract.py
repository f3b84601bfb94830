"""Finding the JSON in a model's reply: fences, prose around it, brackets inside strings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
