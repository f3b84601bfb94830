"""The embedded engine's curator: each insight becomes an ADD in the section it fits; persistently harmful bullets go.

- content: the insight's `key_insight` (its `correct_approach` when that is empty); repeated lessons once.
- section: the section of the most similar existing bullet when one clearly matches (it shares tokens with
  the lesson or its cosine is at least `MATCH_COSINE`); otherwise the section whose name and description
  share the most content tokens with the lesson; otherwise the dataset's fallback (`others`).
- DELETE: a bullet evaluated harmful in this reflection whose harmful votes now exceed its helpful ones by
  `DELETE_MARGIN` or more.

Near-duplicate ADDs become UPDATEs in the merge, whoever proposed them.
"""

from __future__ import annotations

from contracts.ace import DeltaContextItem, Insight, Playbook, ReflectionResult, SearchQuery
from graphs.ace.heuristic_text import excerpt
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.search.hybrid import HybridSearch
from graphs.text.normalize import normalize
from graphs.text.tokenize import content_tokens

MATCH_COSINE = 0.3
DELETE_MARGIN = 3
MAX_CONTENT_CHARS = 20_000


def lesson_of(insight: Insight) -> str:
    """The text an insight contributes as a bullet."""
    return (insight.key_insight.strip() or insight.correct_approach.strip())[:MAX_CONTENT_CHARS]


async def choose_section(lesson: str, playbook: Playbook, rules: SectionRules, search: HybridSearch) -> str:
    """The section a lesson belongs in (see the module docstring)."""
    allowed = Playbook(metadata=playbook.metadata, bullets=[b for b in playbook.bullets if rules.allows(b.section)])
    hits = await search.asearch(SearchQuery(query_text=lesson[:8_000], top_k=1, min_confidence=0.0), allowed)
    if hits and (hits[0].bm25_raw > 0 or hits[0].cosine >= MATCH_COSINE):
        return hits[0].bullet.section
    tokens = content_tokens(lesson)
    scored = [
        (len(tokens & content_tokens(f"{d.name.replace('_', ' ')} {d.description}")), -i, d.name)
        for i, d in enumerate(rules.definitions)
    ]
    best = max(scored, default=None)
    if best is not None and best[0] > 0:
        return best[2]
    return rules.fallback_section()


async def propose_deltas(
    reflection: ReflectionResult, playbook: Playbook, rules: SectionRules, search: HybridSearch
) -> list[DeltaContextItem]:
    """Deltas for `reflection` against `playbook` (whose counters already include its evaluations)."""
    deltas: list[DeltaContextItem] = []
    seen: set[str] = set()
    for insight in reflection.insights:
        lesson = lesson_of(insight)
        key = normalize(lesson)
        if not key or key in seen:
            continue
        seen.add(key)
        section = await choose_section(lesson, playbook, rules, search)
        why = insight.error_identification.strip() or insight.reasoning.strip()
        deltas.append(
            DeltaContextItem(
                type="ADD",
                section=section,
                content=lesson,
                reasoning=excerpt(f"lesson from reflecting on {reflection.trajectory_query!r}: {why}"),
            )
        )
    harmful_now = {e.bullet_id for e in reflection.bullet_evaluations if e.tag == "harmful"}
    deltas.extend(
        DeltaContextItem(
            type="DELETE",
            section=bullet.section,
            bullet_id=bullet.id,
            reasoning=f"harmful {bullet.harmful} times against helpful {bullet.helpful}",
        )
        for bullet in playbook.bullets
        if bullet.id in harmful_now and bullet.harmful - bullet.helpful >= DELETE_MARGIN
    )
    return deltas
