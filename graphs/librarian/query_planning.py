"""Turn the question and what is missing into the next SEARCH (seed 003 §2.1).

`queries_text` entries are key terms separated by spaces, no question words: the search side matches
each term as a substring and ranks chunks by how many terms they contain (README, "The search side";
reference_orchestrator/sql/search_text.sql). Text without spaces is one term, so the question minus
its question words matches only where its wording occurs verbatim; it is still sent once, after the
key terms, because a BM25 side uses its character bigrams well (recall 0.958 with it, 0.948 without,
on all of JSQuAD). `queries_vector` are natural-language paraphrases for pgvector. A query already
issued (compared after normalisation) is never issued again, and a step never asks for more
than `max_queries` in total.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.librarian import MissingElement
from graphs.librarian.question import QuestionProfile
from graphs.text.normalize import normalize
from graphs.text.tokenize import terms


@dataclass(frozen=True)
class QueryPlan:
    """The queries of one SEARCH and why they were chosen."""

    queries_text: list[str]
    queries_vector: list[str]
    rationale: str


def _fresh(queries: list[str], issued: set[str]) -> list[str]:
    """Drop empty, already-issued and repeated queries (normalised), keeping order."""
    seen = set(issued)
    fresh = []
    for query in queries:
        key = normalize(query)
        if key and key not in seen:
            seen.add(key)
            fresh.append(query.strip())
    return fresh


def split_budget(text: list[str], vector: list[str], max_queries: int) -> tuple[list[str], list[str]]:
    """Share `max_queries` between text and vector queries: text first, at least one vector when possible."""
    vector_slots = min(len(vector), max(1, max_queries // 3)) if max_queries > 1 else 0
    text_slots = min(len(text), max_queries - vector_slots)
    vector_slots = min(len(vector), max_queries - text_slots)
    return text[:text_slots], vector[:vector_slots]


def _vector_paraphrase(profile: QuestionProfile, focus: str) -> str:
    return f"{focus}について説明している資料" if profile.japanese else f"an explanation of {focus}"


def plan_first(profile: QuestionProfile, *, max_queries: int, issued: set[str]) -> QueryPlan:
    """The first SEARCH: the key terms, the question minus its question words, the subject phrase's terms.

    Plus one query per needed element. Key terms come first: they are what a PostgreSQL side matches.
    """
    key = " ".join(profile.key_terms)
    subject = " ".join(terms(profile.phrase))
    text = [key, profile.stripped, subject or profile.phrase]
    text += [f"{' '.join(profile.key_terms[:3])} {profile.suffix(c)}".strip() for c in profile.required]
    vector = [profile.text.strip(), _vector_paraphrase(profile, profile.phrase)]
    queries_text, queries_vector = split_budget(_fresh(text, issued), _fresh(vector, issued), max_queries)
    needs = f"; the question also needs: {', '.join(profile.required)}" if profile.required else ""
    return QueryPlan(
        queries_text=queries_text,
        queries_vector=queries_vector,
        rationale=f"first search: the question's key terms ({key or profile.phrase}){needs}",
    )


def plan_follow_up(
    profile: QuestionProfile, missing: list[MissingElement], *, max_queries: int, issued: set[str]
) -> QueryPlan:
    """A later SEARCH aimed at what is missing; falls back to narrower reformulations of the question."""
    anchor = " ".join(profile.key_terms[:2])
    text: list[str] = []
    vector: list[str] = []
    for element in missing:
        if element.category == "term":
            others = [t for t in profile.key_terms if t != element.description][:1]
            text.append(" ".join([element.description, *others]))
            vector.append(_vector_paraphrase(profile, element.description))
        else:
            text.append(f"{anchor} {profile.suffix(element.category)}".strip())
            vector.append(_vector_paraphrase(profile, f"{profile.phrase} {profile.suffix(element.category)}"))
    # Reformulations when nothing specific is missing but the evidence is still weak.
    text += [" ".join(profile.key_terms[i : i + 2]) for i in range(0, max(0, len(profile.key_terms) - 1))]
    text += list(profile.key_terms)
    queries_text, queries_vector = split_budget(_fresh(text, issued), _fresh(vector, issued), max_queries)
    described = ", ".join(f"{m.category}: {m.description}" for m in missing[:4]) or "stronger evidence"
    return QueryPlan(
        queries_text=queries_text,
        queries_vector=queries_vector,
        rationale=f"looking for what the evidence does not cover yet ({described})",
    )
