"""The embedded engine's generator: an extractive answer built from the best-matching bullets.

Only bullets that actually match the query are used: those sharing a token with it (raw BM25 > 0) or,
for embedders that find paraphrases, with a raw cosine of at least `MIN_COSINE`. Min-max normalised scores
cannot say that, because the best of a bad lot always normalises to 1. Of those, at most three that score
near the best are quoted, with their ids so the answer stays grounded; the reasoning steps say what was
searched and why each bullet was used, which is what the reflector later judges.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.ace import Trajectory
from graphs.ace.heuristic_reflect import is_japanese
from graphs.ace.hybrid_search import Hit

MAX_ANSWER_BULLETS = 3
MIN_COSINE = 0.35
RELATIVE_SCORE = 0.75
"""A used bullet's combined score is at least this share of the best one's, so weak matches stay out."""


@dataclass(frozen=True)
class GeneratedAnswer:
    """An answer and the trajectory that records how it was made."""

    answer: str
    trajectory: Trajectory


def matching(hits: list[Hit]) -> list[Hit]:
    """The hits that match the query at all (see the module docstring)."""
    return [h for h in hits if h.bm25_raw > 0 or h.cosine >= MIN_COSINE]


def generate_extractive(query: str, dataset: str, playbook_size: int, hits: list[Hit]) -> GeneratedAnswer:
    """Answer `query` by quoting up to MAX_ANSWER_BULLETS matching bullets, best first."""
    candidates = matching(hits)
    best = max((h.combined_score for h in candidates), default=0.0)
    chosen = [h for h in candidates if h.combined_score >= RELATIVE_SCORE * best][:MAX_ANSWER_BULLETS]
    japanese = is_japanese(query)
    steps = [
        f"Searched the {dataset!r} playbook ({playbook_size} bullets) for: {query}",
        f"{len(hits)} candidate(s) passed the filters; {len(matching(hits))} share terms with the query",
    ]
    steps += [
        f"Used [{h.bullet.id}] ({h.bullet.section}; combined score {h.combined_score:.2f}, "
        f"confidence {h.bullet.confidence_score:.2f})"
        for h in chosen
    ]
    if chosen:
        header = "プレイブックによると:" if japanese else "From the playbook:"
        answer = "\n".join([header, *(f"- {h.bullet.content} [{h.bullet.id}]" for h in chosen)])
        steps.append("Composed an extractive answer from the used bullets")
    else:
        answer = (
            "プレイブックにはこの質問に関する指針がない。"
            if japanese
            else "The playbook has no guidance that matches this query."
        )
        steps.append("No bullet matched, so none was used")
    trajectory = Trajectory(
        query=query,
        dataset=dataset,
        generated_answer=answer,
        reasoning_steps=steps,
        used_bullet_ids=[h.bullet.id for h in chosen],
    )
    return GeneratedAnswer(answer=answer, trajectory=trajectory)
