"""Reject replies that copy the prompt's example placeholders or instructions instead of answering.

A prompt's JSON example holds descriptive placeholders ("a natural-language paraphrase for vector
search", "one line") and its prose holds instructions. A small model often writes them back as
values, and those values would go to the caller as queries, reasons or notes. What counts as a copy
is derived from the prompt template itself (never from a hand-kept list), so it follows the prompt
files as they change:

- placeholders: every double-quoted value in the template (a quoted string not followed by `:`, so
  not a key), except identifier-like ones (`c1`, `S1`, `rag_search`: real ids and enum values the
  model is meant to repeat), ones holding a template variable, and words shorter than
  `MIN_EXACT_CHARS` (「費用」 is an answer, not a placeholder);
- instructions: every sentence of the template's prose (lines outside the JSON example) of at
  least `MIN_COPY_CHARS` characters, without a template variable.

A reply string copies one when, after normalisation (NFKC, case-folded, whitespace and surrounding
punctuation removed), it equals it, contains it (for texts of at least `MIN_COPY_CHARS`), or is a
piece of it at least `MIN_COPY_CHARS` long. Short placeholders therefore only match exactly: "one
line" rejects the reason "one line", not a reason that happens to contain those words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import msgspec

MIN_COPY_CHARS = 20
"""Normalised length from which containment counts as copying (below it, only equality does)."""
MIN_EXACT_CHARS = 3
"""Shorter example values are not placeholders: a reply may rightly say 「費用」 or "cost" (punctuation-only
placeholders such as "..." still count, whatever their length)."""

_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_KEY_FOLLOWS = re.compile(r"\s*:")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_.\-]*")
_VARIABLE = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*(?:[:!][^{}]*)?\}(?!\})")
_SENTENCE_END = re.compile(r"(?<=[.。!?！？])\s*")
_JSON_LINE = re.compile(r'\{\{|\}\}|"\s*:')
_EDGES = "\"'`<>「」『』()（）[]［］.,:;。、…*-–— "


def normalize_text(text: str) -> str:
    """The comparison form: NFKC, case-folded, no whitespace, no punctuation at either end.

    A text that is nothing but punctuation ("...", a classic placeholder) keeps it, so it can match.
    """
    folded = "".join(unicodedata.normalize("NFKC", text).casefold().split()).replace("\0", "")
    return folded.strip(_EDGES) or folded


@dataclass(frozen=True)
class Phrases:
    """A template's normalised placeholders and instruction sentences, indexed for the three matches."""

    exact: frozenset[str]
    long: re.Pattern[str] | None
    """Those of at least `MIN_COPY_CHARS`, as one alternation: a reply containing one copies it."""
    joined: str
    """All of them, NUL-separated: one substring search finds a reply that is a piece of any."""

    def __bool__(self) -> bool:
        return bool(self.exact)


@lru_cache(maxsize=64)
def prompt_phrases(template: str) -> Phrases:
    """The normalised placeholders and instruction sentences of `template` (an unfilled prompt)."""
    phrases: set[str] = set()
    for match in _QUOTED.finditer(template):
        value = match.group(1)
        if _KEY_FOLLOWS.match(template, match.end()) or _IDENTIFIER.fullmatch(value) or _VARIABLE.search(value):
            continue
        normalized = normalize_text(value)
        if len(normalized) < MIN_EXACT_CHARS and any(ch.isalnum() for ch in normalized):
            continue  # a word as short as 「費用」 is an answer a model may rightly give, not a placeholder
        phrases.add(normalized)
    for line in template.splitlines():
        if _JSON_LINE.search(line):
            continue  # the JSON example: its values were taken above, its keys are not text
        for sentence in _SENTENCE_END.split(line):
            if _VARIABLE.search(sentence):
                continue
            normalized = normalize_text(_QUOTED.sub(lambda m: m.group(1), sentence))
            if len(normalized) >= MIN_COPY_CHARS:
                phrases.add(normalized)
    phrases.discard("")
    ordered = sorted(phrases)
    return Phrases(
        exact=frozenset(ordered),
        long=_alternation([p for p in ordered if len(p) >= MIN_COPY_CHARS]),
        joined="\0".join(ordered),
    )


def copied_phrase(text: str, phrases: Phrases) -> bool:
    """Whether `text` copies one of `phrases`."""
    mine = normalize_text(text)
    if not mine:
        return False
    if mine in phrases.exact:
        return True
    if len(mine) >= MIN_COPY_CHARS and mine in phrases.joined:
        return True
    return phrases.long is not None and phrases.long.search(mine) is not None


def _alternation(phrases: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(map(re.escape, phrases))) if phrases else None


def echo_problems(value: object, template: str) -> list[str]:
    """One re-ask message per string in `value` that copies `template`'s placeholders or instructions.

    `value` is a decoded reply (a Struct or plain JSON values); every string in it is checked, with
    its JSON path, because every one may reach the caller.
    """
    phrases = prompt_phrases(template)
    if not phrases:
        return []
    problems = []
    for path, text in _strings(msgspec.to_builtins(value), "$"):
        if copied_phrase(text, phrases):
            problems.append(
                f"{path}: {text[:120]!r} repeats the prompt's example or instruction text; "
                "write the actual content for this request"
            )
    return problems


def _strings(node: object, path: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    stack: list[tuple[object, str]] = [(node, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            found.append((where, item))
        elif isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return found
