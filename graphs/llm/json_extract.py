"""Find the JSON in a chat model's reply: models wrap it in Markdown fences or chat around it.

Used by the structured-output helper before decoding. Extraction is purely textual: deciding whether
the JSON is *valid* (and repairing it when it is not) happens afterwards.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

JsonKind = Literal["object", "array"]

_OPENERS: dict[JsonKind | None, str] = {"object": "{", "array": "[", None: "{["}
_CLOSER = {"{": "}", "[": "]"}
_FENCE = re.compile(r"\A```[ \t]*(?:json5?|jsonc|JSON)?[ \t]*\n?(?P<body>.*?)\n?[ \t]*```\Z", re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)


def _fenced_body(reply: str) -> str | None:
    """The body of a ```json fence that wraps the whole (stripped) reply, else None."""
    match = _FENCE.match(reply)
    if match is None:
        return None
    body = match.group("body")
    # Two fenced blocks also start and end with a fence; a raw line starting with ``` cannot be
    # inside a JSON string (newlines there are escaped), so it means the fence does not wrap it all.
    if _FENCE_LINE.search(body):
        return None
    return body.strip()


_MISMATCHED = -1
_UNTERMINATED = -2


def _balanced_end(text: str, start: int) -> int:
    """Index just past the bracket that closes `text[start]`, or why there is none.

    String-aware: brackets inside JSON strings (including after escaped quotes) do not count.
    Returns `_MISMATCHED` for a wrong closer (`{ ]`: this opener does not start a JSON value) and
    `_UNTERMINATED` when the text ends first (everything after `start` is inside an unclosed value).
    """
    stack: list[str] = []
    in_string = False
    escaped = False
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
        elif ch in _CLOSER:
            stack.append(_CLOSER[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return _MISMATCHED
            if not stack:
                return i + 1
    return _UNTERMINATED


def _is_json(text: str) -> bool:
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return True


def extract_json_text(reply: str, *, want: JsonKind | None = None) -> str | None:
    """The JSON text inside `reply`, or None when there is none.

    Rules, in order:
    1. A Markdown fence (```json or bare ```) that wraps the whole stripped reply: its body, returned
       even when it is malformed, so truncated output can still be repaired.
    2. Otherwise the first balanced top-level object (or array) that decodes as JSON.
    3. Otherwise the first balanced top-level candidate (e.g. `{'a': 1}`), for the repair step to try.

    "Top level" matters: the inside of a malformed object (a trailing comma, single quotes) is never
    searched, because a valid inner object is a fragment, not the answer.

    An opening bracket that is never closed ends the search: what follows it is nested inside a
    value cut off mid-way (a truncated reply), not top level, so returning an inner object would
    hand back a fragment. `unbalanced_json_tail` gives the repair step the whole cut-off value.

    Args:
        reply: The model's text.
        want: Only consider objects (`"object"`) or arrays (`"array"`); `None` accepts either. Pass
            it when the schema says which, so a citation like `[1]` in prose is not mistaken for the
            answer.
    """
    text = reply.strip()
    if not text:
        return None
    body = _fenced_body(text)
    if body is not None:
        return body or None
    openers = _OPENERS[want]
    first_balanced: str | None = None
    resume_at = 0
    for start, ch in enumerate(text):
        if start < resume_at or ch not in openers:
            continue
        end = _balanced_end(text, start)
        if end == _UNTERMINATED:
            break
        if end == _MISMATCHED:
            continue
        candidate = text[start:end]
        if _is_json(candidate):
            return candidate
        if first_balanced is None:
            first_balanced = candidate
        resume_at = end
    return first_balanced


def unbalanced_json_tail(reply: str, *, want: JsonKind | None = None) -> str | None:
    """Everything from the first opening bracket on, for repairing a reply cut off mid-JSON.

    `extract_json_text` finds nothing in `'{"a": [1, 2'` because it never closes; this gives the
    repair step something to work with. None when the reply has no opening bracket at all.
    """
    text = reply.strip()
    positions = [i for i in (text.find(ch) for ch in _OPENERS[want]) if i >= 0]
    return text[min(positions) :] if positions else None
