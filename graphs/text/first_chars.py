r"""A faster `search` for alternations of cues: a regex guarded by the characters its matches can start with.

Python's `re` tries every branch of an alternation at every position of the text. When the branches start
with character classes (`\d+年`, `[一二三]+月`, `\b(?:1\d{3})`) it has no way to skip positions: it does so only
for a pattern that begins with a literal or with one class. The Librarian's answer-type patterns
(graphs/librarian/answer_types.yaml) are such alternations, searched in every snippet of every step, so
they cost more than the rest of the scoring.

`guarded(pattern)` reads the parsed pattern for the set of characters any match must start with and returns
`(?=[those])(?:pattern)`. A match of the pattern at a position starts with one of them, and the lookahead
consumes nothing, so both patterns match at exactly the same positions with the same spans and groups; the
guarded one fails every other position after one class test. When that set cannot be bounded (the pattern
can match the empty string, a branch starts with `.` or a negated class, case is ignored, or a construct
this reading does not know), the pattern is returned unchanged.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

# `re`'s own parser and opcode names (private modules without type stubs, stable across 3.11-3.13).
_parser: Any = importlib.import_module("re._parser")
_ops: Any = importlib.import_module("re._constants")

_CATEGORIES = {
    _ops.CATEGORY_DIGIT: r"\d",
    _ops.CATEGORY_NOT_DIGIT: r"\D",
    _ops.CATEGORY_SPACE: r"\s",
    _ops.CATEGORY_NOT_SPACE: r"\S",
    _ops.CATEGORY_WORD: r"\w",
    _ops.CATEGORY_NOT_WORD: r"\W",
}
_ZERO_WIDTH = (_ops.AT, _ops.ASSERT, _ops.ASSERT_NOT)
_REPEATS = (_ops.MAX_REPEAT, _ops.MIN_REPEAT, _ops.POSSESSIVE_REPEAT)


class _Unbounded(Exception):
    """The first characters of some match cannot be written as one character class."""


_SCOPED_FLAGS_THAT_CHANGE_CLASSES = re.IGNORECASE | re.ASCII | re.UNICODE | re.LOCALE
"""A group's own `(?i:...)`, `(?a:...)`, `(?u:...)` or `(?L:...)` changes what its classes match (case, charset):
the guard, compiled with the pattern's global flags, would not cover the same characters."""


def guarded(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`pattern`, prefixed with a lookahead of the characters its matches start with (see the module docstring)."""
    if pattern.flags & re.IGNORECASE:
        return pattern
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        if parsed.state.flags & re.IGNORECASE or _skips_already(parsed.data):
            return pattern
        atoms, nullable = _first(parsed.data)
        if nullable or not atoms:
            return pattern
        return re.compile(f"(?=[{''.join(dict.fromkeys(atoms))}])(?:{pattern.pattern})", pattern.flags)
    except (_Unbounded, re.error):
        return pattern


def any_of(patterns: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One guarded pattern that matches somewhere in a text exactly when one of `patterns` does, or None.

    `(?:a)|(?:b)` matches at a position exactly when `a` or `b` does there, so one search of it answers "does
    any of them match", stopping at the first position either matches instead of scanning the text once per
    pattern. None when they do not combine unchanged: no patterns, a capturing group (a later pattern's group
    numbers would shift under its back references), a compiled flag of its own (the joined pattern has none),
    or a global flag inside one (an error once not first).
    """
    if not patterns or any(pattern.groups for pattern in patterns):
        return None
    if any(pattern.flags != re.UNICODE for pattern in patterns):
        return None  # a flag of its own (re.I, re.M, ...) would be lost in the joined pattern
    try:
        return guarded(re.compile("|".join(f"(?:{pattern.pattern})" for pattern in patterns)))
    except re.error:
        return None


def _skips_already(items: Any) -> bool:
    """Whether `re` skips impossible positions by itself (a guard would take that faster scan away).

    It does for a pattern that starts with a literal or a class, or with a branch of literals only.
    """
    if not items:
        return False
    op, value = items[0]
    if op is _ops.BRANCH:
        return all(branch and branch[0][0] is _ops.LITERAL for branch in value[1])
    return op is _ops.LITERAL or op is _ops.IN


def _first(items: Any) -> tuple[list[str], bool]:
    """Class atoms covering the first character of any match of a sequence, and whether it can match empty."""
    atoms: list[str] = []
    for op, value in items:
        if op in _ZERO_WIDTH:
            continue  # consumes nothing: the first character comes from what follows
        found, nullable = _first_of_item(op, value)
        atoms += found
        if not nullable:
            return atoms, False
    return atoms, True


def _first_of_item(op: Any, value: Any) -> tuple[list[str], bool]:
    """`_first` of one consuming item of a sequence."""
    if op is _ops.LITERAL:
        return [_literal(value)], False
    if op is _ops.IN:
        return _class(value), False
    if op is _ops.BRANCH:
        atoms: list[str] = []
        nullable = False
        for branch in value[1]:
            found, empty = _first(branch)
            atoms += found
            nullable = nullable or empty
        return atoms, nullable
    if op is _ops.SUBPATTERN:
        _group, added, removed, inner = value
        if (added | removed) & _SCOPED_FLAGS_THAT_CHANGE_CLASSES:
            raise _Unbounded  # a class under another case or charset rule than the guard's: not the same set
        return _first(inner)
    if op in _REPEATS:
        low, _high, inner = value
        found, empty = _first(inner)
        return found, low == 0 or empty
    if op is _ops.ATOMIC_GROUP:
        return _first(value)
    raise _Unbounded  # ANY, NOT_LITERAL, group references, conditionals: no bounded class


def _literal(code: int) -> str:
    return re.escape(chr(code))


def _class(items: Any) -> list[str]:
    r"""A parsed `[...]` (or `\d`-style escape) as atoms of a class; a negated class is unbounded."""
    atoms = []
    for op, value in items:
        if op is _ops.LITERAL:
            atoms.append(_literal(value))
        elif op is _ops.RANGE:
            atoms.append(f"{_literal(value[0])}-{_literal(value[1])}")
        elif op is _ops.CATEGORY and value in _CATEGORIES:
            atoms.append(_CATEGORIES[value])
        else:  # NEGATE, or a class form this reading does not know
            raise _Unbounded
    return atoms
