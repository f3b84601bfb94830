"""Text helpers the embedded ACE engine shares: content tokens, query-term coverage, sentences, a query's topic.

The generator, reflector and curator of the `heuristic` engine reason about the same things: which of a
query's content words a bullet covers (weighted by how rare each word is in the playbook, so "api" in an
AppWorld playbook counts for little and "paginated" for much), which sentences of a bullet speak to the
query, and what a query is about once its question words are gone (so a lesson can name its topic
without quoting the question).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from graphs.text.tokenize import terms

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'`\u3040-\u30ff\u3400-\u9fff])|(?<=[。！？])\s*|\n+")
_EN_QUESTION_HEAD = re.compile(
    r"^\s*(?:(?:how|what|which|who|whom|whose|when|where|why)\b(?:\s+(?:many|much|long|often))?"
    r"(?:\s+(?:is|are|was|were|do|does|did|can|could|should|would|will|to))?"
    r"(?:\s+(?:i|we|you|one))?|(?:can|could|should|would|do|does|is|are)\s+(?:i|we|you|one)\b)\s*",
    re.IGNORECASE,
)
_JA_QUESTION_TAIL = re.compile(
    r"(?:は|が|を|に|で|と|の|って)*(?:何|なに|なん|どこ|いつ|誰|だれ|どれ|どの|どんな|どう|どのよう|なぜ|いくつ|いくら)[^、。]*$"
)
_JA_QUESTION_END = re.compile(r"(?:ですか|ますか|でしょうか|だろうか|のか|か)?[？?。\s]*$")
_JA_TRAILING_PARTICLES = re.compile(r"(?:は|が|を|に|で|と|の|って|には|とは)+$")
EXCERPT_CHARS = 300


def is_japanese(text: str) -> bool:
    """Whether to phrase output in Japanese (the text has kana or kanji)."""
    return _CJK.search(text) is not None


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


_SUFFIXES = ("ations", "ation", "ating", "ated", "ates", "ate", "ings", "ing", "edly", "ed", "es", "s", "ly", "e")


def stem(token: str) -> str:
    """A crude English stem, so paginate / paginated / pagination and song / songs meet; other tokens as they are."""
    if not token.isascii() or not token.isalpha() or len(token) < 4:
        return token
    if token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) == 4:
        return token[:-1] if token.endswith("s") and not token.endswith("ss") else token  # apis → api
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            return token[: -len(suffix)]
    return token


def covered(query_tokens: Iterable[str], text_tokens: Iterable[str]) -> set[str]:
    """The query tokens whose stem the text holds."""
    stems = {stem(t) for t in text_tokens}
    return {t for t in query_tokens if stem(t) in stems}


def coverage(query_tokens: set[str], text_tokens: set[str], weights: Mapping[str, float]) -> float:
    """Share of the query's content (weighted by rarity, 1.0 for an unknown token) that `text_tokens` holds."""
    total = sum(weights.get(t, 1.0) for t in query_tokens)
    if total <= 0:
        return 0.0
    return sum(weights.get(t, 1.0) for t in covered(query_tokens, text_tokens)) / total


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (". " before a capital, 。！？, line breaks); "i.e. call" stays one sentence."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def topic(query: str) -> str:
    """What the query is about, without its question form.

    「東京タワーの高さは何メートルですか」→「東京タワーの高さ」; "How do I get all items from a paginated
    API?" → "get all items from a paginated API"; a query that is not a question comes back trimmed.
    """
    text = " ".join(query.split()).strip()
    if is_japanese(text):
        trimmed = _JA_QUESTION_END.sub("", text)
        trimmed = _JA_QUESTION_TAIL.sub("", trimmed)
        trimmed = _JA_TRAILING_PARTICLES.sub("", trimmed)
        return trimmed if len(trimmed) >= 2 else text.rstrip("？?。 ")
    trimmed = _EN_QUESTION_HEAD.sub("", text.rstrip("?!. "))
    return trimmed.strip() or text.rstrip("?!. ")


def key_terms(text: str, limit: int = 5) -> list[str]:
    """The content terms of `text` in order (see `graphs.text.tokenize.terms`), at most `limit`."""
    return terms(text)[:limit]


def listing(items: Iterable[str], limit: int = 8) -> str:
    """`a, b, c` (at most `limit` items)."""
    shown = list(dict.fromkeys(items))[:limit]
    return ", ".join(shown)
