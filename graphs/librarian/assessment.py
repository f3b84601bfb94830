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
from functools import lru_cache

from contracts.librarian import MissingElement
from graphs.librarian.candidates import Candidate, CandidatePool
from graphs.librarian.question import ElementCategory, QuestionProfile, element_cues, states_answer_type
from graphs.text.normalize import normalize
from graphs.text.tokenize import tokenize

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


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with the evaluator's numbers."""

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

    @property
    def usable(self) -> list[ScoredCandidate]:
        """Candidates that share enough with the question to be evidence."""
        return [s for s in self.ranked if s.coverage >= COVERAGE_USABLE]


def _longest_run(sequence: list[str], present: AbstractSet[str]) -> int:
    best = run = 0
    for token in sequence:
        if token in present:
            run += 1
            if run > best:
                best = run
        else:
            run = 0
    return best


@lru_cache(maxsize=1)
def _element_patterns() -> tuple[tuple[ElementCategory, re.Pattern[str]], ...]:
    """One alternation per element kind: a regex search finds whether any cue occurs, in one C-level pass."""
    return tuple(
        (name, re.compile("|".join(map(re.escape, cues.evidence))))
        for name, cues in element_cues().items()
        if cues.evidence
    )


def _elements_in(text: str) -> frozenset[ElementCategory]:
    """The element kinds whose evidence cues (substrings) occur in the text."""
    return frozenset(name for name, pattern in _element_patterns() if pattern.search(text))


def assess(profile: QuestionProfile, pool: CandidatePool) -> Assessment:
    """Score every candidate and decide whether the evidence answers the question."""
    all_tokens = tokenize(profile.text)
    question_sequence = [t for t in all_tokens if t in profile.content_tokens]
    snippet_tokens = _question_tokens_in(pool, profile.content_tokens.union(all_tokens))
    normalized = [c.normalized for c in pool.candidates]
    weights = _token_weights(profile.content_tokens, snippet_tokens)
    total_weight = sum(weights.values()) or 1.0
    max_fused = max((c.fused_rank for c in pool.candidates), default=0.0) or 1.0
    run_norm = max(1, len(question_sequence))

    scored = []
    for candidate, tokens, text in zip(pool.candidates, snippet_tokens, normalized, strict=True):
        covered = frozenset(profile.content_tokens & tokens)
        coverage = sum(weights[t] for t in covered) / total_weight
        contiguity = _longest_run(question_sequence, tokens) / run_norm
        retrieval = 0.5 * candidate.fused_rank / max_fused + 0.5 * candidate.norm_score
        relevance = W_COVERAGE * coverage + W_CONTIGUITY * contiguity + W_RETRIEVAL * retrieval
        relevance += W_PHRASE * _longest_run(all_tokens, tokens) / max(1, len(all_tokens))
        if profile.answer_types and coverage > 0 and states_answer_type(text, profile.answer_types):
            relevance += W_ANSWER_TYPE
        scored.append(
            ScoredCandidate(
                candidate=candidate,
                relevance=round(relevance, 6),
                coverage=coverage,
                contiguity=contiguity,
                covered_tokens=covered,
                elements=_elements_in(text),
            )
        )
    # Ties broken by first-seen order, so the outcome never depends on anything but the input.
    scored.sort(key=lambda s: -s.relevance)

    all_text = "\n".join(normalized)
    covered_terms = [t for t in profile.key_terms if normalize(t) in all_text]
    missing = _missing(profile, covered_terms, scored)
    sufficient = bool(scored) and scored[0].coverage >= COVERAGE_SUFFICIENT and not missing
    return Assessment(
        ranked=scored, sufficient=sufficient, missing=missing, covered_terms=covered_terms, token_weights=weights
    )


def _question_tokens_in(pool: CandidatePool, asked: AbstractSet[str]) -> list[frozenset[str]]:
    """Per candidate, which of the question's tokens it holds.

    Only the question's own tokens matter to the score, so each snippet is asked about those, not tokenised whole.
    """
    return [frozenset(c.tokens_among(asked)) for c in pool.candidates]


def _token_weights(content_tokens: Iterable[str], snippet_tokens: list[frozenset[str]]) -> dict[str, float]:
    """IDF of each question token over the candidates (0 when no candidate holds it)."""
    n = len(snippet_tokens)
    weights: dict[str, float] = {}
    for token in content_tokens:
        df = sum(1 for tokens in snippet_tokens if token in tokens)
        weights[token] = math.log(1.0 + (n + 1) / (df + 0.5)) if df else 0.0
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
