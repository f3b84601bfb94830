"""Find the JSON in a chat model's reply: models wrap it in Markdown fences or chat around it.

Used by the structured-output helper before decoding. Extraction is purely textual: deciding whether
the JSON is *valid* (and repairing it when it is not) happens afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import msgspec

JsonKind = Literal["object", "array"]

_OPENERS: dict[JsonKind | None, str] = {"object": "{", "array": "[", None: "{["}
_CLOSER = {"{": "}", "[": "]"}
_OPENERS_RUN = re.compile(r"[\[{]+")
_INSIDE = re.compile(r'(")[^"\\]*(?:\\.[^"\\]*)*"?|([\[{]+)|[\]}]', re.DOTALL)
"""Inside a bracket: a whole JSON string (escapes included; unclosed runs to the end), a run of openers or a closer."""
_OPENING = 2
"""`_INSIDE`'s group of a run of opening brackets."""
_FENCE = "```"
_FENCE_HEAD = re.compile(r"[ \t]*(?:json5?|jsonc|JSON)?[ \t]*\n?")
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)


def _fenced_body(reply: str) -> str | None:
    """The body of a ```json fence that wraps the whole (stripped) reply, else None.

    Read without a regex spanning the body: `.*?` followed by an anchored tail backtracks over every
    position, which made 20,000 spaces after a fence take seconds.
    """
    if len(reply) < 2 * len(_FENCE) or not (reply.startswith(_FENCE) and reply.endswith(_FENCE)):
        return None
    inner = reply[len(_FENCE) : -len(_FENCE)]
    head = _FENCE_HEAD.match(inner)
    body = inner[head.end() :] if head is not None else inner
    # Two fenced blocks also start and end with a fence; a raw line starting with ``` cannot be
    # inside a JSON string (newlines there are escaped), so it means the fence does not wrap it all.
    if _FENCE_LINE.search(body):
        return None
    return body.strip()


def _candidates(text: str, openers: str) -> Iterator[tuple[int, int]]:
    """`(start, end)` of each balanced candidate, in the order the search tries them; one pass over `text`.

    A candidate is a bracketed span opened by one of `openers` and closed by its matching bracket
    (brackets inside JSON strings, escaped quotes included, do not count). The order is the order of
    the candidates' starts, and a candidate is never one nested inside an earlier candidate:

    - a span closed at the top level is tried as soon as it closes; a bracket that is not one of
      `openers` (an object when an array is wanted) is followed too, so its strings are read as
      strings, and the outermost candidates inside it are tried when it closes;
    - when a closer does not match (`{ ]`), every bracket still open is no JSON value; what was closed
      inside them is tried instead (the outermost such spans, in order), and the scan goes on after
      the closer with nothing open. Each character is read once, so a reply of 16,000 `{` then `]`
      costs one pass, not one pass per brace;
    - when the text ends with one of `openers` still open, the search ends there: what follows it is
      inside a value cut off mid-way, not top level.
    """
    open_groups: list[int] = []  # where each bracket opened outside any JSON string, and not closed yet, is
    closed: list[tuple[int, int]] = []  # candidates closed inside the open groups, in closing order
    position = 0
    # Outside any bracket only an opener matters (quotes there are prose); inside, a string is skipped whole,
    # so the regex engine, not a Python loop, walks the characters that cannot change anything.
    while (first := _OPENERS_RUN.search(text, position)) is not None:
        open_groups.extend(range(first.start(), first.end()))
        for token in _INSIDE.finditer(text, first.end()):
            kind = token.lastindex
            if kind == _OPENING:
                open_groups.extend(range(*token.span()))
            elif kind is None:  # a closer (a string only skips)
                settled = _close(text, openers, open_groups, closed, token.start())
                if settled:
                    yield from settled
                if not open_groups:
                    position = token.end()
                    break
        else:
            break
    cut_off = next((g for g in open_groups if text[g] in openers), len(text))
    yield from (span for span in _outermost(closed) if span[0] < cut_off)


def _close(
    text: str, openers: str, open_groups: list[int], closed: list[tuple[int, int]], at: int
) -> list[tuple[int, int]]:
    """The candidates a closing bracket at `at` settles, updating the open groups and the closed spans.

    A matching closer inside another group only records its span (an outer candidate may still win);
    one that closes the top level settles it; a mismatch means no open bracket is JSON, so what closed
    inside them is all there is, and the scan starts over with nothing open.
    """
    start = open_groups.pop()
    wanted = text[start] in openers
    if _CLOSER[text[start]] != text[at]:
        settled = _outermost(closed)
        open_groups.clear()
    elif open_groups:
        if wanted:
            closed.append((start, at + 1))
        return []
    elif wanted:
        settled = [(start, at + 1)]
    else:
        settled = _outermost(closed)
    closed.clear()
    return settled


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans not nested in another, by position; `spans` are in closing order (inner before outer)."""
    kept: list[tuple[int, int]] = []
    for start, end in reversed(spans):
        if not kept or start < kept[-1][0]:
            kept.append((start, end))
    kept.reverse()
    return kept


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
    first_balanced: str | None = None
    for start, end in _candidates(text, _OPENERS[want]):
        candidate = text[start:end]
        if _is_json(candidate):
            return candidate
        if first_balanced is None:
            first_balanced = candidate
    return first_balanced


def unbalanced_json_tail(reply: str, *, want: JsonKind | None = None) -> str | None:
    """Everything from the first opening bracket on, for repairing a reply cut off mid-JSON.

    `extract_json_text` finds nothing in `'{"a": [1, 2'` because it never closes; this gives the
    repair step something to work with. None when the reply has no opening bracket at all.
    """
    text = reply.strip()
    positions = [i for i in (text.find(ch) for ch in _OPENERS[want]) if i >= 0]
    return text[min(positions) :] if positions else None
