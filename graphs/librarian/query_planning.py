"""Turn the question and what is missing into the next SEARCH (seed 003 §2.1).

`queries_text` entries are key terms separated by spaces, no question words: the search side matches
each term as a substring and ranks chunks by how many terms they contain (README, "The search side";
reference_orchestrator/sql/search_text.sql). Text without spaces is one term, so the question minus
its question words matches only where its wording occurs verbatim; it is still sent once, after the
key terms, because a BM25 side uses its character bigrams well (recall 0.958 with it, 0.948 without,
on all of JSQuAD). `queries_vector` are natural-language paraphrases for pgvector. A query already
issued (compared after normalisation) is never issued again, and a step never asks for more
than `max_queries` in total.

Every entry carries content terms only: never question words, English function words or search-syntax
operators (an "or" would become an OR under a web-search parser). A query already issued is never issued
again, compared after normalisation and regardless of term order (「東京 タワー」 after 「タワー 東京」 is the
same search), and neither is an entry of single characters (「高」 matches everything). Before giving up,
the follow-up planner tries every key term no issued query has used yet. `queries_vector` entries are
natural-language statements of what is sought, never the question copied.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from contracts.librarian import MissingElement
from graphs.librarian.question import QuestionProfile, without_question_words
from graphs.text.normalize import normalize
from graphs.text.tokenize import terms

_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_OPERATOR_CHARS = re.compile(r"[\"'()|&!:*<>{}\[\]]")
_OPERATOR_WORDS = frozenset({"or", "and", "not"})


@dataclass(frozen=True)
class QueryPlan:
    """The queries of one SEARCH and why they were chosen."""

    queries_text: list[str]
    queries_vector: list[str]
    rationale: str


def query_key(query: str) -> str:
    """What makes two queries the same search: their normalised terms, in any order."""
    return " ".join(sorted(normalize(query).split()))


def text_entry(query: str) -> str:
    """A `queries_text` entry as the contract defines one: content terms, no operators, no function words."""
    # Question words and forms go in both languages (a model may send 「何メートルですか」 as a query); in
    # English the stopwords go too, and with them or/and/not.
    cleaned = _OPERATOR_CHARS.sub(" ", without_question_words(query))
    if not _JAPANESE.search(cleaned):
        cleaned = " ".join(terms(cleaned))
    words = [w.lstrip("-+~") for w in cleaned.split()]
    return " ".join(w for w in words if w and w not in _OPERATOR_WORDS)


def _worth_a_search(entry: str) -> bool:
    """Single characters (「高」, "x") match almost everything: an entry needs one term of two or more."""
    return any(len(word) >= 2 for word in entry.split())


def fresh_text(queries: list[str], issued: set[str]) -> list[str]:
    """Text entries cleaned to the contract, without repeats of each other or of anything issued (any order)."""
    return _fresh([text_entry(q) for q in queries], issued, worth=_worth_a_search)


def fresh_vector(queries: list[str], issued: set[str]) -> list[str]:
    """Vector queries without repeats of each other or of anything issued."""
    return _fresh([" ".join(q.split()) for q in queries], issued, worth=lambda q: len(q) >= 2)


def _fresh(queries: list[str], issued: set[str], *, worth: Callable[[str], bool]) -> list[str]:
    seen = {query_key(q) for q in issued}
    fresh = []
    for query in queries:
        key = query_key(query)
        if key and key not in seen and worth(query):
            seen.add(key)
            fresh.append(query.strip())
    return fresh


def split_budget(text: list[str], vector: list[str], max_queries: int) -> tuple[list[str], list[str]]:
    """Share `max_queries` between text and vector queries: text first, at least one vector when possible."""
    vector_slots = min(len(vector), max(1, max_queries // 3)) if max_queries > 1 else 0
    text_slots = min(len(text), max_queries - vector_slots)
    vector_slots = min(len(vector), max_queries - text_slots)
    return text[:text_slots], vector[:vector_slots]


def _element_statement(profile: QuestionProfile, suffix: str) -> str:
    """A natural-language description of an element of the topic: 「光合成の例」, "example of photosynthesis"."""
    return f"{profile.phrase}の{suffix}" if profile.japanese else f"{suffix} of {profile.phrase}"


def plan_first(profile: QuestionProfile, *, max_queries: int, issued: set[str]) -> QueryPlan:
    """The first SEARCH: the key terms, the question minus its question words, the subject phrase's terms.

    Plus one query per needed element. Key terms come first: they are what a PostgreSQL side matches.
    """
    key = " ".join(profile.key_terms)
    subject = " ".join(terms(profile.phrase))
    text = [key, profile.stripped, subject or profile.phrase]
    text += [f"{' '.join(profile.key_terms[:3])} {profile.suffix(c)}".strip() for c in profile.required]
    # The question stated, not asked: closer to how a passage that answers it is written.
    vector = [profile.phrase, *(_element_statement(profile, profile.suffix(c)) for c in profile.required)]
    queries_text, queries_vector = split_budget(fresh_text(text, issued), fresh_vector(vector, issued), max_queries)
    needs = f"; the question also needs: {', '.join(profile.required)}" if profile.required else ""
    return QueryPlan(
        queries_text=queries_text,
        queries_vector=queries_vector,
        rationale=f"first search: the question's key terms ({key or profile.phrase}){needs}",
    )


def _unexplored_first(candidates: list[str], issued: set[str]) -> list[str]:
    """Candidates with a term no issued query has used yet come first (stable otherwise)."""
    used = {word for query in issued for word in normalize(query).split()}
    return sorted(candidates, key=lambda q: all(word in used for word in normalize(q).split()))


def plan_follow_up(
    profile: QuestionProfile, missing: list[MissingElement], *, max_queries: int, issued: set[str]
) -> QueryPlan:
    """A later SEARCH aimed at what is missing; then narrower reformulations, unexplored terms first."""
    key_terms = [t for t in profile.key_terms if len(t) >= 2] or list(profile.key_terms)
    anchor = " ".join(key_terms[:2])
    text: list[str] = []
    vector: list[str] = []
    for element in missing:
        if element.category == "term":
            others = [t for t in key_terms if t != element.description][:1]
            text.append(" ".join([element.description, *others]))
        else:
            text.append(f"{anchor} {profile.suffix(element.category)}".strip())
            vector.append(_element_statement(profile, profile.suffix(element.category)))
    # Reformulations when nothing specific is missing but the evidence is still weak: every pair of key
    # terms, then each key term alone, unexplored ones first.
    pairs = [f"{a} {b}" for i, a in enumerate(key_terms) for b in key_terms[i + 1 :]]
    text += _unexplored_first([*pairs, *key_terms], issued)
    queries_text, queries_vector = split_budget(fresh_text(text, issued), fresh_vector(vector, issued), max_queries)
    described = ", ".join(f"{m.category}: {m.description}" for m in missing[:4]) or "stronger evidence"
    return QueryPlan(
        queries_text=queries_text,
        queries_vector=queries_vector,
        rationale=f"looking for what the evidence does not cover yet ({described})",
    )
