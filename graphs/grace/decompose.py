"""Split a complex question into the searches the embedded planner runs (one per sub-question).

Three shapes, tried in order: several questions in one message (split at `?`/`？`/`。`), a comparison
("AとBの違い", "compare A and B", "A vs B": one search per side, sharing the aspect compared), and a
question whose cue category has a standard follow-up search (causes, pros and cons, steps: the
question itself plus its key terms with that category's words). Anything else stays one search.
"""

from __future__ import annotations

import re

from graphs.grace.complexity import is_japanese, matched_categories
from graphs.text.normalize import normalize
from graphs.text.tokenize import terms

_SENTENCES = re.compile(r"[^?？。!！]+[?？。!！]?")
_JA_COMPARISONS = (
    re.compile(r"^(?P<a>.+?)と(?P<b>.+?)の(?:違い|ちがい|相違|差異|差|比較)"),
    re.compile(r"^(?P<a>.+?)と(?P<b>.+?)を比較"),
    re.compile(r"^(?P<a>.+?)と(?P<b>.+?)(?:の|を)比べ"),
    re.compile(r"^(?P<a>.+?)と(?P<b>.+?)(?:は|では)(?:どう|何が|なにが|どこが)(?:違|異な)"),
)
_EN_COMPARISONS = (
    re.compile(r"differences? between (?P<a>.+?) and (?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
    re.compile(r"compare (?P<a>.+?) (?:and|with|to|vs\.?|versus) (?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
    re.compile(r"how (?:does|do|is|are) (?P<a>.+?) (?:differ from|compare (?:to|with)) (?P<b>.+?)(?:[?.!]|$)", re.I),
    re.compile(r"^(?P<a>.+?) (?:vs\.?|versus) (?P<b>.+?)(?:[?.!]|$)", re.IGNORECASE),
)
_EN_QUALIFIER = re.compile(r"\s+(?:for|in|on|at|when|as|regarding|with|under|,)\s+|,\s*", re.IGNORECASE)
_FOLLOW_UP = {
    "causal": ("理由 原因", "reasons causes"),
    "analysis": ("長所 短所", "advantages disadvantages"),
    "procedure": ("手順", "steps"),
    "enumeration": ("一覧", "list"),
}
_COMPARISON_WORDS = frozenset(
    normalize(w)
    for w in (
        "比較",
        "違",
        "違い",
        "相違",
        "差異",
        "差",
        "compare",
        "comparison",
        "difference",
        "differences",
        "vs",
        "versus",
    )
)


def sub_questions(query: str, *, limit: int) -> list[str]:
    """The search queries for `query`, at most `limit`, de-duplicated, in the order they should run."""
    text = query.strip()
    for split in (_split_questions, _split_comparison, _follow_up):
        parts = list(dict.fromkeys(p for p in split(text) if terms(p)))
        if len(parts) >= 2:
            return parts[:limit]
    return [text]


def _split_questions(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.findall(text) if s.strip()]


def _split_comparison(text: str) -> list[str]:
    patterns = _JA_COMPARISONS if is_japanese(text) else _EN_COMPARISONS
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return _sides(text, match.group("a").strip(), match.group("b").strip())
    return []


def _sides(text: str, a: str, b: str) -> list[str]:
    """One query per side; an aspect attached to the second side (AとBの高さ) is shared with the first."""
    if is_japanese(text) and "の" in b:
        entity, aspect = b.split("の", 1)
        sides = [f"{a}の{aspect}", f"{entity}の{aspect}"]
    else:
        sides = [_EN_QUALIFIER.split(a, maxsplit=1)[0], _EN_QUALIFIER.split(b, maxsplit=1)[0]]
    named = {t for side in sides for t in terms(side)} | _COMPARISON_WORDS
    context = [t for t in terms(text) if t not in named]
    joiner = " " if context else ""
    return [f"{side}{joiner}{' '.join(context)}" for side in sides]


def _follow_up(text: str) -> list[str]:
    japanese = is_japanese(text)
    for category in matched_categories(text):
        if category in _FOLLOW_UP:
            words = _FOLLOW_UP[category][0 if japanese else 1]
            return [text, " ".join(dict.fromkeys([*terms(text), *words.split()]))]
    return []
