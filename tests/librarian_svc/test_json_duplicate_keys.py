"""`duplicate_key_paths`: every key given twice in one object is found, with its path; nothing else is."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs.llm.validation import child_path
from librarian_svc.json_duplicate_keys import duplicate_key_paths


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        pytest.param('{"a": 1, "b": 2}', [], id="none"),
        pytest.param('{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}', [], id="same-key-in-different-objects"),
        pytest.param('{"a": 1, "a": 1}', ["$.a"], id="same-value-twice"),
        pytest.param('{"a": 1, "b": 2, "a": 3, "a": 4}', ["$.a"], id="three-times-reported-once"),
        pytest.param('{"q": {"x": 1, "x": 2}}', ["$.q.x"], id="nested"),
        pytest.param('{"h": [{"id": 1}, {"id": 2, "id": 3}]}', ["$.h[1].id"], id="in-an-array"),
        pytest.param('{"m": {"two words": 1, "two words": 2}}', ['$.m["two words"]'], id="quoted-path"),
        pytest.param('{"user_query": "A", "user\\u005fquery": "B"}', ["$.user_query"], id="escaped-spelling"),
        pytest.param('{"a": 1, "a": 2, "b": {"c": 1, "c": 2}}', ["$.a", "$.b.c"], id="every-one"),
        pytest.param('{"n": 1e999999, "n": 123456789012345678901234567890}', ["$.n"], id="numbers-kept-as-text"),
    ],
)
def test_finds_every_repeated_key(text: str, paths: list[str]) -> None:
    assert duplicate_key_paths(text) == paths


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_what_json_dumps_writes_has_no_duplicates(value: object) -> None:
    assert duplicate_key_paths(json.dumps(value)) == []


@given(st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=5), st.data())
def test_a_repeated_key_is_always_found(value: dict[str, int], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(value)))
    text = json.dumps(value)[:-1] + f", {json.dumps(key)}: 0}}"
    assert duplicate_key_paths(f'{{"outer": [0, {text}]}}') == [child_path("$.outer[1]", key)]
