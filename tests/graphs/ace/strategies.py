"""Hypothesis strategies for the ACE data models (valid values of every contract type)."""

from __future__ import annotations

import msgspec
from hypothesis import strategies as st

from contracts.ace import (
    Bullet,
    BulletEvaluation,
    DeltaContextItem,
    Insight,
    Playbook,
    PlaybookMetadata,
    ReflectionResult,
    SearchQuery,
    SearchResult,
)

# Any Unicode text JSON can carry (no lone surrogates), Japanese included.
TEXT_CHARS = st.characters(exclude_categories=["Cs"])
bullet_ids = st.from_regex(r"[a-z]{1,5}-[0-9]{5}", fullmatch=True)
section_names = st.from_regex(r"[a-z][a-z0-9]{0,7}(_[a-z0-9]{1,6}){0,2}", fullmatch=True)
"""Snake_case names, the form ACE headings map to (so they survive the text format)."""
contents = st.text(TEXT_CHARS, min_size=1, max_size=120)
short_text = st.text(TEXT_CHARS, max_size=80)
counters = st.integers(min_value=0, max_value=10**6)
datasets = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,15}", fullmatch=True)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def bullets(draw: st.DrawFn, *, text_format: bool = False, sections: st.SearchStrategy[str] = section_names) -> Bullet:
    """A valid bullet; `text_format` leaves out the fields the ACE text format does not carry."""
    bullet = Bullet(
        id=draw(bullet_ids),
        section=draw(sections),
        content=draw(contents),
        helpful=draw(counters),
        harmful=draw(counters),
    )
    if text_format:
        return bullet
    return msgspec.structs.replace(
        bullet,
        searchable_text=draw(short_text),
        keywords=draw(st.lists(st.text(TEXT_CHARS, max_size=12), max_size=4)),
        source_trajectory=draw(short_text),
    )


@st.composite
def playbooks(draw: st.DrawFn, *, text_format: bool = False, max_size: int = 12) -> Playbook:
    """A valid playbook: unique ids, any sections."""
    items = draw(st.lists(bullets(text_format=text_format), max_size=max_size, unique_by=lambda b: b.id))
    metadata = PlaybookMetadata(last_bullet_number=draw(st.integers(min_value=0, max_value=10**6)))
    return Playbook(metadata=metadata, bullets=items)


deltas = st.builds(
    DeltaContextItem,
    type=st.sampled_from(["ADD", "UPDATE", "DELETE"]),
    section=section_names,
    bullet_id=st.none() | bullet_ids,
    content=short_text,
    reasoning=short_text,
)
search_queries = st.builds(
    SearchQuery,
    query_text=contents,
    top_k=st.integers(min_value=1, max_value=200),
    section_filter=st.none() | st.lists(section_names, max_size=3),
    min_confidence=unit,
)
search_results = st.builds(SearchResult, bullet=bullets(), vector_score=unit, bm25_score=unit, combined_score=unit)
insights = st.builds(
    Insight,
    reasoning=short_text,
    error_identification=short_text,
    root_cause_analysis=short_text,
    correct_approach=short_text,
    key_insight=short_text,
)
evaluations = st.builds(
    BulletEvaluation, bullet_id=bullet_ids, tag=st.sampled_from(["helpful", "harmful", "neutral"]), reason=short_text
)
reflections = st.builds(
    ReflectionResult,
    insights=st.lists(insights, max_size=4),
    bullet_evaluations=st.lists(evaluations, max_size=4),
    trajectory_query=st.text(TEXT_CHARS, max_size=80),
    trajectory_dataset=datasets,
    iteration_count=st.integers(min_value=0, max_value=5),
)
