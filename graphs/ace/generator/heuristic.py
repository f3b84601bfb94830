"""The embedded engine's generator: an answer that applies the playbook's most relevant bullets to the query.

Relevance is measured on the query's content words, not on the search score: a bullet counts when it
covers enough of what the query asks about, each word weighted by how rare it is in the playbook
(`coverage`), or when a semantic embedder finds it very close (`SEMANTIC_COSINE`). Search scores are
min-max normalised over the candidates, so the best of a bad lot always scores 1, and raw BM25 rewards
shared function words ("i", "do" in "i.e., do not"): neither can tell an off-topic bullet. Bullets below
`MIN_COVERAGE`, or far below the best one (`RELATIVE_COVERAGE`), are dropped and the reasoning steps say
so. At most three bullets are used, most relevant first (search score plus half the coverage).

The answer addresses the query: a line naming what it answers, then one numbered point per bullet, made
of the bullet's sentences that speak to the query (the whole bullet when it is short), each ending with
the bullet's id so the answer stays grounded and the reflector can tell which bullet said what.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.ace import Trajectory
from graphs.ace.heuristic_text import coverage, covered, excerpt, is_japanese, sentences, topic
from graphs.ace.search.hybrid import Hit
from graphs.ace.search.index import search_text
from graphs.text.tokenize import content_tokens

MAX_ANSWER_BULLETS = 3
MIN_COVERAGE = 0.3
"""Least share of the query's (rarity-weighted) content a bullet must cover to be applied."""
RELATIVE_COVERAGE = 0.4
"""A used bullet covers at least this share of what the most relevant bullet covers."""
SEMANTIC_COSINE = 0.6
"""A cosine this high counts as relevant without shared words (semantic embedders find paraphrases)."""
SHORT_BULLET_CHARS = 240
"""A bullet up to this long is applied whole; a longer one by its sentences that speak to the query."""
MAX_SENTENCES = 2
COVERAGE_BOOST = 0.5
"""Weight of coverage next to the search score when ordering the used bullets."""

_HOW_TO = ("how do", "how can", "how should", "how to", "how would", "can i", "can we", "should i", "should we")
_QUESTION = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is ", "are ", "does", "do ")


@dataclass(frozen=True)
class GeneratedAnswer:
    """An answer and the trajectory that records how it was made."""

    answer: str
    trajectory: Trajectory


@dataclass(frozen=True)
class Relevance:
    """How much of the query one hit covers, and whether it is used."""

    hit: Hit
    coverage: float
    covered: tuple[str, ...]


def judge_relevance(query: str, hits: list[Hit], weights: dict[str, float]) -> list[Relevance]:
    """Each hit's coverage of the query's content words (`weights`: rarity of each word in the playbook)."""
    wanted = {t for t in content_tokens(query) if t in weights}
    judged = []
    for hit in hits:
        tokens = content_tokens(search_text(hit.bullet))
        found = tuple(sorted(covered(wanted, tokens), key=lambda t: -weights[t]))
        judged.append(Relevance(hit=hit, coverage=coverage(wanted, tokens, weights), covered=found))
    return judged


def choose(judged: list[Relevance]) -> list[Relevance]:
    """The bullets to apply: relevant enough, near the most relevant, at most MAX_ANSWER_BULLETS, best first."""
    relevant = [r for r in judged if r.coverage >= MIN_COVERAGE or r.hit.cosine >= SEMANTIC_COSINE]
    best = max((r.coverage for r in relevant), default=0.0)
    kept = [r for r in relevant if r.coverage >= RELATIVE_COVERAGE * best or r.hit.cosine >= SEMANTIC_COSINE]
    # Most relevant first: the search score (which normalises for length) with coverage as a boost; coverage
    # alone over-rates a long bullet that mentions every query word in passing.
    kept.sort(key=lambda r: -(COVERAGE_BOOST * r.coverage + r.hit.combined_score))
    return kept[:MAX_ANSWER_BULLETS]


def applied_text(content: str, query: str, weights: dict[str, float]) -> str:
    """What of a bullet the answer uses: all of a short bullet, else its sentences that cover the query."""
    flat = " ".join(content.split())
    parts = sentences(content)
    if len(flat) <= SHORT_BULLET_CHARS or len(parts) <= 1:
        return flat
    wanted = {t for t in content_tokens(query) if t in weights}
    scored = [(coverage(wanted, content_tokens(part), weights), i) for i, part in enumerate(parts)]
    best = max(score for score, _ in scored)
    if best <= 0:
        return " ".join(parts[0].split())
    picked = sorted(i for score, i in sorted(scored, reverse=True)[:MAX_SENTENCES] if score >= best / 2)
    return " ".join(" ".join(parts[i].split()) for i in picked)


def _header(query: str, japanese: bool) -> str:
    """The line that says what the answer answers."""
    subject = topic(query)
    if japanese:
        return f"「{subject}」について、プレイブックの指針を当てはめると:"
    lowered = query.strip().lower()
    if lowered.startswith(_HOW_TO):
        return f"To {subject[:1].lower()}{subject[1:]}:"
    if lowered.startswith(_QUESTION) or lowered.endswith("?"):
        return f"To answer “{excerpt(query, 200)}”, apply:"
    return f"To {subject[:1].lower()}{subject[1:]}:"  # an instruction ("Pay all pending Venmo requests")


def generate_extractive(
    query: str, dataset: str, playbook_size: int, hits: list[Hit], weights: dict[str, float]
) -> GeneratedAnswer:
    """Answer `query` with the relevant bullets among `hits` (see the module docstring).

    Args:
        query: The user's query.
        dataset: The playbook's dataset (recorded in the trajectory).
        playbook_size: Bullets in the playbook (for the reasoning steps).
        hits: The hybrid search results, best first.
        weights: Rarity of the query's tokens in the playbook (`HybridSearch.aterm_weights`).
    """
    japanese = is_japanese(query)
    judged = judge_relevance(query, hits, weights)
    chosen = choose(judged)
    used = {r.hit.bullet.id for r in chosen}
    steps = [
        f"Searched the {dataset!r} playbook ({playbook_size} bullets) for: {query}",
        f"{len(hits)} candidate(s) passed the filters; {len(chosen)} cover enough of the query to apply",
    ]
    steps += [f"Left out [{r.hit.bullet.id}]: {_why_not(r, chosen)}" for r in judged if r.hit.bullet.id not in used][:5]
    steps += [
        f"Used [{r.hit.bullet.id}] ({r.hit.bullet.section}; covers {r.coverage:.0%} of the query"
        + (f": {', '.join(r.covered[:5])}" if r.covered else f", cosine {r.hit.cosine:.2f}")
        + f"; confidence {r.hit.bullet.confidence_score:.2f})"
        for r in chosen
    ]
    if chosen:
        lines = [_header(query, japanese)]
        lines += [
            f"{n}. {applied_text(r.hit.bullet.content, query, weights)} [{r.hit.bullet.id}]"
            for n, r in enumerate(chosen, start=1)
        ]
        answer = "\n".join(lines)
        steps.append("Applied the used bullets to the query, most relevant first, each point citing its bullet")
    else:
        answer = (
            "プレイブックにはこの質問に関する指針がない。"
            if japanese
            else "The playbook has no guidance that matches this query."
        )
        steps.append("No bullet covers enough of the query, so none was used")
    trajectory = Trajectory(
        query=query,
        dataset=dataset,
        generated_answer=answer,
        reasoning_steps=steps,
        used_bullet_ids=[r.hit.bullet.id for r in chosen],
    )
    return GeneratedAnswer(answer=answer, trajectory=trajectory)


def _why_not(relevance: Relevance, chosen: list[Relevance]) -> str:
    best = max((r.coverage for r in chosen), default=0.0)
    if relevance.coverage < MIN_COVERAGE and relevance.hit.cosine < SEMANTIC_COSINE:
        return f"off-topic (covers {relevance.coverage:.0%} of the query)"
    if relevance.coverage < RELATIVE_COVERAGE * best:
        return f"far less relevant than the best bullet (covers {relevance.coverage:.0%}, the best {best:.0%})"
    return f"less relevant than the {len(chosen)} used (covers {relevance.coverage:.0%})"
