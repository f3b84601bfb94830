"""The embedded engine's judgement of the pool: how relevant each candidate is, and what is missing.

Deterministic term-coverage and score rules (seed 003 §2.2 without a model):
- coverage: the share of the question's content tokens a snippet contains, each token weighted by
  its rarity in the pool (a token every candidate has says little about which one answers);
- contiguity: the longest run of consecutive question tokens the snippet contains, which rewards
  snippets that state the asked-about fact rather than mention its words separately;
- retrieval: the caller's ranks fused across queries and rounds (reciprocal rank);
- phrasing: the longest run of all the question's tokens (kana included) the snippet contains;
- answer type: whether the snippet states an answer of the kind the question asks for (a period for
  「どの期間」, a figure for 「何メートル」), which tells the passage that answers from one that only
  repeats the question's words.
Missing elements are key terms no candidate mentions and the element kinds the question asks for
(definition, formula, …) that no strong candidate supplies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from contracts.librarian import MissingElement
from graphs.librarian.candidates import Candidate, CandidatePool
from graphs.librarian.question import ElementCategory, QuestionProfile, element_cues, states_answer_type
from graphs.text.normalize import normalize
from graphs.text.tokenize import cjk_code_points, is_cjk_char, is_cjk_pair, tokens_present

W_COVERAGE = 0.5
W_CONTIGUITY = 0.3
W_RETRIEVAL = 0.2
W_PHRASE = 0.1
"""Bonus for the longest run of the question's own tokens, particles and verbs in kana included
(「みられる」): the passage that phrases the fact as the question does."""
W_ANSWER_TYPE = 0.1
"""Bonus for a snippet that states an answer of the kind asked for (answer_types.yaml)."""
COVERAGE_SUFFICIENT = 0.6
"""A best candidate below this weighted coverage means the question is not answered yet."""
COVERAGE_USABLE = 0.2
"""Candidates below this share too little with the question to count as evidence at all."""
STRONG_SHARE = 0.8
"""Candidates within this share of the best relevance count as strong (element checks, ambiguity)."""


class ScoredCandidate(NamedTuple):
    """A candidate with the evaluator's numbers (a tuple: a step makes one per candidate, hundreds of them)."""

    candidate: Candidate
    relevance: float
    coverage: float
    contiguity: float
    covered_tokens: frozenset[str]
    elements: frozenset[ElementCategory]


@dataclass(frozen=True)
class Assessment:
    """The evaluator's verdict for one step."""

    ranked: list[ScoredCandidate]
    sufficient: bool
    missing: list[MissingElement]
    covered_terms: list[str]
    token_weights: dict[str, float]

    @cached_property
    def usable(self) -> tuple[ScoredCandidate, ...]:
        """Candidates that share enough with the question to be evidence (worked out once: a step asks often)."""
        return tuple(s for s in self.ranked if s.coverage >= COVERAGE_USABLE)


@lru_cache(maxsize=1)
def _element_patterns() -> tuple[tuple[ElementCategory, re.Pattern[str]], ...]:
    """One alternation per element kind: a regex search finds whether any cue occurs, in one C-level pass."""
    return tuple(
        (name, re.compile("|".join(map(re.escape, cues.evidence))))
        for name, cues in element_cues().items()
        if cues.evidence
    )


def _elements_in(text: str, wanted: AbstractSet[ElementCategory]) -> frozenset[ElementCategory]:
    """Which of the `wanted` element kinds have an evidence cue (a substring) in the text."""
    return frozenset(name for name, pattern in _element_patterns() if name in wanted and pattern.search(text))


def assess(profile: QuestionProfile, pool: CandidatePool) -> Assessment:
    """Score every candidate and decide whether the evidence answers the question.

    A candidate's numbers depend only on which of the question's tokens its snippet holds (plus its own
    retrieval figures, answer type and elements), so presence is one boolean matrix (candidates × the
    question's distinct tokens), and coverage, contiguity and phrasing are worked out once per distinct
    row of it rather than once per candidate: a pool of hundreds has a few dozen such rows.
    """
    asked = list(dict.fromkeys([*sorted(profile.content_tokens), *profile.tokens]))
    column = {token: j for j, token in enumerate(asked)}
    normalized = [c.normalized for c in pool.candidates]
    present = _presence(normalized, column)
    weights = _token_weights(profile.content_tokens, present, column)
    scored = _scored(profile, pool, column, present, weights)
    # Ties broken by first-seen order, so the outcome never depends on anything but the input.
    scored.sort(key=lambda s: -s.relevance)

    all_text = "\n".join(normalized)
    covered_terms = [t for t in profile.key_terms if normalize(t) in all_text]
    missing = _missing(profile, covered_terms, scored)
    sufficient = bool(scored) and scored[0].coverage >= COVERAGE_SUFFICIENT and not missing
    return Assessment(
        ranked=scored, sufficient=sufficient, missing=missing, covered_terms=covered_terms, token_weights=weights
    )


def _scored(
    profile: QuestionProfile,
    pool: CandidatePool,
    column: dict[str, int],
    present: npt.NDArray[np.bool_],
    weights: dict[str, float],
) -> list[ScoredCandidate]:
    """Every candidate with its numbers, in pool order, from the presence matrix.

    Coverage depends only on which content tokens a snippet holds, so it is summed once per distinct row of
    those columns; the two runs (contiguity, phrasing) are counted for all snippets at once, column by column.
    """
    candidates = pool.candidates
    if not candidates:
        return []
    all_tokens = profile.tokens
    question_sequence = [t for t in all_tokens if t in profile.content_tokens]
    total_weight = sum(weights.values()) or 1.0
    max_fused = max((c.fused_rank for c in candidates), default=0.0) or 1.0
    # Only the elements the question requires are ever looked at (selection, notes and `missing` ask about
    # `profile.required` alone), so only their cues are searched for.
    required = frozenset(profile.required)

    content = sorted(profile.content_tokens)
    rows, row_of = _distinct_rows(present[:, [column[t] for t in content]])
    per_row = [_covered(row, content, profile.content_tokens, weights, total_weight) for row in rows]
    coverage = np.array([figures[1] for figures in per_row], dtype=np.float64)[row_of]
    contiguity = _longest_runs(present[:, [column[t] for t in question_sequence]]) / max(1, len(question_sequence))
    phrase_run = _longest_runs(present[:, [column[t] for t in all_tokens]])
    fused = np.array([c.fused_rank for c in candidates], dtype=np.float64)
    norm = np.array([c.norm_score for c in candidates], dtype=np.float64)
    retrieval = 0.5 * fused / max_fused + 0.5 * norm
    # Elementwise, in the order the per-candidate formula always had (IEEE doubles: the same numbers).
    relevance = W_COVERAGE * coverage + W_CONTIGUITY * contiguity + W_RETRIEVAL * retrieval
    relevance = relevance + W_PHRASE * phrase_run / max(1, len(all_tokens))
    if profile.answer_types:
        states = [
            cov > 0 and states_answer_type(c.normalized, profile.answer_types)
            for c, cov in zip(candidates, coverage.tolist(), strict=True)
        ]
        relevance = np.where(np.array(states, dtype=bool), relevance + W_ANSWER_TYPE, relevance)
    return [
        ScoredCandidate(
            candidate,
            round(score, 6),  # Python's correctly rounded `round`, as always (numpy's differs in the last digit)
            per_row[row][1],
            run,
            per_row[row][0],
            _elements_in(candidate.normalized, required) if required else _NO_ELEMENTS,
        )
        for candidate, score, row, run in zip(
            candidates, relevance.tolist(), row_of.tolist(), contiguity.tolist(), strict=True
        )
    ]


def _covered(
    row: npt.NDArray[np.bool_],
    content: list[str],
    content_tokens: frozenset[str],
    weights: dict[str, float],
    total_weight: float,
) -> tuple[frozenset[str], float]:
    """The content tokens a row marks, and their weighted share of the question (summed as it always was)."""
    covered = frozenset(content_tokens & {token for token, held in zip(content, row.tolist(), strict=True) if held})
    return covered, sum(weights[t] for t in covered) / total_weight


def _longest_runs(sequence: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """Per row, the longest run of consecutive True columns (the longest stretch of the question a snippet holds).

    The rows are laid end to end with a False cell after each, so no run crosses into the next row, and every
    run is found from where it starts and ends: a fixed number of numpy calls whatever the question's length
    (a loop over its tokens made three calls per token).
    """
    rows, columns = sequence.shape
    best = np.zeros(rows, dtype=np.int64)
    if not rows or not columns:
        return best
    padded = np.zeros((rows, columns + 1), dtype=np.int8)
    padded[:, :columns] = sequence
    edges = np.diff(padded.ravel(), prepend=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    np.maximum.at(best, starts // (columns + 1), np.flatnonzero(edges == -1) - starts)
    return best


_FEW_WORD_TOKENS = 8
_PAIR_FILTER = 1 << 16
_CODE_POINT = (1 << 21) - 1


def _pair_hash(first: npt.NDArray[np.int64], second: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """A 16-bit hash of a code-point pair (both below 2**21): a cheap first test before the exact lookup."""
    return (first * 40503 + second) & (_PAIR_FILTER - 1)


def _distinct_rows(present: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
    """The distinct rows of a boolean matrix and, per row, which of them it is (`np.unique(axis=0)`, faster).

    Up to 64 columns a row packs into one integer, and integers are unique-d far faster than rows; wider rows
    are keyed by their packed bytes.
    """
    packed = np.packbits(present, axis=1, bitorder="little")
    if packed.shape[1] > 8:
        which: dict[bytes, int] = {}
        inverse = np.array([which.setdefault(row.tobytes(), len(which)) for row in packed], dtype=np.intp)
        first = np.zeros(len(which), dtype=np.intp)
        first[inverse[::-1]] = np.arange(len(inverse) - 1, -1, -1)
        return present[first], inverse
    padded = np.zeros((present.shape[0], 8), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    codes = padded.view(np.uint64).reshape(-1)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return present[first], inverse.reshape(-1)


_NO_ELEMENTS: frozenset[ElementCategory] = frozenset()


def _presence(normalized: list[str], column: dict[str, int]) -> npt.NDArray[np.bool_]:
    """Which of the question's tokens (`column`: token -> its column) each (normalised) snippet holds.

    `tokens_present`, for all snippets at once. All snippets' code points are one integer array, joined by a
    newline, which `normalize` never leaves in a text and which is no CJK character, so nothing found across
    two snippets counts:
    - a token of two CJK characters is present exactly when it is a substring (see `tokens_present`): when one
      of the snippet's adjacent code-point pairs equals it, looked up for all pairs at once;
    - a token of one CJK character is present exactly when it stands alone, a CJK run of its own (`tokenize`
      cuts longer runs into bigrams): an occurrence whose neighbours are not CJK, checked for all at once;
    - any other token must be a whole word run: only the snippets that hold it as a substring are tokenised.
    """
    asked = list(column)
    present = np.zeros((len(normalized), len(asked)), dtype=bool)
    pairs = [j for j, token in enumerate(asked) if is_cjk_pair(token)]
    singles = [j for j, token in enumerate(asked) if len(token) == 1 and is_cjk_char(token)]
    if (pairs or singles) and normalized:
        points = np.frombuffer("\n".join(normalized).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        # Each text and the newline after it.
        spans = np.fromiter(map(len, normalized), dtype=np.int64, count=len(normalized)) + 1
        starts = np.cumsum(spans) - spans
        for found, columns in (
            _pairs_found(points.astype(np.int64), asked, pairs),
            _singles_found(points, asked, singles),
        ):
            present[np.searchsorted(starts, found, side="right") - 1, columns] = True
    others = frozenset(asked).difference(asked[j] for j in (*pairs, *singles))
    if others:
        # A few such tokens (a word or two): a substring test skips most snippets. Many (an English question):
        # `tokens_present` costs one pass over the snippet however many are asked.
        few = len(others) <= _FEW_WORD_TOKENS
        for i, text in enumerate(normalized):
            if not few or any(token in text for token in others):
                for token in tokens_present(text, others):
                    present[i, column[token]] = True
    return present


_Found = tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]
"""Positions in the joined code points, and the column of the token found at each."""


def _pairs_found(points: npt.NDArray[np.int64], asked: list[str], pairs: list[int]) -> _Found:
    """Where the two-CJK-character tokens `asked[j]` (j in `pairs`) occur in the joined code points."""
    if not pairs:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    wanted = np.array([(ord(asked[j][0]) << 21) | ord(asked[j][1]) for j in pairs], dtype=np.int64)
    # A small filter table first (a hash of the pair), so only the few positions it lets through are
    # looked up exactly among the wanted pairs.
    table = np.zeros(_PAIR_FILTER, dtype=bool)
    table[_pair_hash(wanted >> 21, wanted & _CODE_POINT)] = True
    maybe = np.flatnonzero(table[_pair_hash(points[:-1], points[1:])])
    codes = (points[maybe] << 21) | points[maybe + 1]
    order = np.argsort(wanted)
    sorted_wanted = wanted[order]
    slot = np.minimum(np.searchsorted(sorted_wanted, codes), len(sorted_wanted) - 1)
    hit = sorted_wanted[slot] == codes
    return maybe[hit], np.array(pairs, dtype=np.intp)[order[slot[hit]]]


def _singles_found(points: npt.NDArray[np.uint32], asked: list[str], singles: list[int]) -> _Found:
    """Where the one-CJK-character tokens `asked[j]` (j in `singles`) stand alone in the joined code points."""
    if not singles:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    wanted = np.array([ord(asked[j]) for j in singles], dtype=np.uint32)
    at = np.flatnonzero(np.isin(points, wanted))
    before = np.ones(len(at), dtype=bool)
    before[at > 0] = ~cjk_code_points(points[at[at > 0] - 1])
    after = np.ones(len(at), dtype=bool)
    inner = at < len(points) - 1
    after[inner] = ~cjk_code_points(points[at[inner] + 1])
    alone = at[before & after]
    column_of = dict(zip(wanted.tolist(), singles, strict=True))
    return alone, np.array([column_of[code] for code in points[alone].tolist()], dtype=np.intp)


def _token_weights(
    content_tokens: Iterable[str], present: npt.NDArray[np.bool_], column: dict[str, int]
) -> dict[str, float]:
    """IDF of each question token over the candidates (0 when no candidate holds it)."""
    n = present.shape[0]
    df = present.sum(axis=0).tolist()
    weights: dict[str, float] = {}
    for token in content_tokens:
        held = df[column[token]]
        weights[token] = math.log(1.0 + (n + 1) / (held + 0.5)) if held else 0.0
    return weights


def _missing(profile: QuestionProfile, covered_terms: list[str], scored: list[ScoredCandidate]) -> list[MissingElement]:
    """Key terms no candidate holds, then the elements the question requires that no topical candidate supplies."""
    missing = [
        MissingElement(category="term", description=t)
        for t in profile.key_terms
        if len(t) >= 2 and t not in covered_terms
    ]
    # An element counts as supplied when any candidate about the question supplies it: an example paragraph
    # shares fewer of the question's words than the definition next to it, and is still the example asked for.
    topical = [s for s in scored if s.coverage >= COVERAGE_USABLE]
    supplied = set().union(*(s.elements for s in topical)) if topical else set()
    missing += [
        MissingElement(category=category, description=f"{category} for {profile.phrase}")
        for category in profile.required
        if category not in supplied
    ]
    return missing
