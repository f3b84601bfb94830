"""Refusing a JSON object that names one key twice: a value silently dropped is input reinterpreted.

msgspec, like most JSON parsers, keeps the last of two equal keys without a word (msgspec#648 asks for
an option; there is none). So `{"user_query": "A", "user_query": "B"}` would search for B while the
caller's logs, a proxy that validated the first value, or another parser that keeps the first, all say A.

The check runs after the typed decode has accepted the body, so the JSON is known to be valid, and uses
the standard library's C scanner with a pairs hook (numbers kept as their text: cheaper, and no digit
limit). It costs about twice the typed decode (measured in-process on the Librarian's 161 KB step of
`bench.librarian_throughput`: 0.58 ms against 0.33 ms, a few percent of the step); only a body that has
a duplicate is parsed a second time, to name the path of every one.
"""

from __future__ import annotations

import json
from typing import Any

from graphs.llm.validation import child_path


class _Duplicate(Exception):
    """Raised by the pairs hook at the first object with a repeated key (the slow walk then finds them all)."""


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> None:
    if len(pairs) > 1 and len(dict(pairs)) != len(pairs):
        raise _Duplicate


class _Pairs(list[tuple[str, Any]]):
    """An object's key/value pairs in their order, kept apart from arrays for the walk."""


_DETECT = json.JSONDecoder(object_pairs_hook=_refuse_repeats, parse_int=str, parse_float=str)
_KEEP_PAIRS = json.JSONDecoder(object_pairs_hook=_Pairs, parse_int=str, parse_float=str)


def duplicate_key_paths(text: str) -> list[str]:
    """The JSON path of every key given more than once in its object (each once, in document order).

    `text` must be valid JSON (the caller has decoded it already). Raises `RecursionError` for nesting
    deeper than the interpreter's stack allows, like any recursive decoder.
    """
    try:
        _DETECT.decode(text)
    except _Duplicate:
        found: dict[str, None] = {}  # an ordered set: linear in the keys however many repeat
        _walk(_KEEP_PAIRS.decode(text), "$", found)
        return list(found)
    return []


def _walk(value: Any, path: str, found: dict[str, None]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, item in value:
            child = child_path(path, key)
            if key in seen:
                found[child] = None
            seen.add(key)
            _walk(item, child, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, child_path(path, index), found)
