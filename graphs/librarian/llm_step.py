"""The LLM engine's think step: one structured call that evaluates the evidence and plans the next search.

Seed 003 §2.2 asks for evaluation and reflection; doing both in one call (not one per snippet)
keeps a step to one round trip. The prompt is bounded whatever the history length: only the
top candidates by the heuristic ranking are shown, each snippet truncated. Ids the model names
that are not in the pool are re-asked once, then dropped and logged (grounding). Each selected
candidate carries the model's reason, and a selection comes with the model's coverage notes, so a
COMPLETE built from the model's selection says why and how much from one judgement.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.librarian import MissingElement
from contracts.limits import LIBRARIAN
from graphs.context import AgentContext
from graphs.librarian.assessment import Assessment
from graphs.librarian.question import QuestionProfile
from graphs.llm.ask import Prompt, ask_model
from graphs.llm.grounding import KnownIds

PROMPT_CANDIDATES = 12
"""Candidates shown to the model, best first by the heuristic ranking (bounds the prompt)."""
SNIPPET_CHARS = 700
"""Characters of each snippet shown to the model."""


Note = Annotated[str, msgspec.Meta(max_length=LIBRARIAN.text_chars)]
WrittenQuery = Annotated[str, msgspec.Meta(max_length=LIBRARIAN.written_query_chars)]
Queries = Annotated[list[WrittenQuery], msgspec.Meta(max_length=LIBRARIAN.queries_per_round)]


class LLMSelected(msgspec.Struct, kw_only=True):
    """A candidate the model chose, by pool id."""

    id: str
    why_relevant: Annotated[str, msgspec.Meta(min_length=1, max_length=LIBRARIAN.text_chars)]


class LLMDecision(msgspec.Struct, kw_only=True):
    """What the model decided in one call.

    The lengths are what the request contract accepts back (the SEARCH's queries return in
    `search_history`, the missing elements in state): a longer reply is clipped to them, not refused.
    """

    sufficient: bool
    missing: Annotated[list[MissingElement], msgspec.Meta(max_length=LIBRARIAN.missing_items)] = msgspec.field(
        default_factory=list
    )
    selected: list[LLMSelected] = msgspec.field(default_factory=list)
    queries_text: Queries = msgspec.field(default_factory=list)
    queries_vector: Queries = msgspec.field(default_factory=list)
    rationale: Note = ""
    coverage_notes: Note = ""


def _render_candidates(assessment: Assessment) -> str:
    lines = []
    for scored in assessment.ranked[:PROMPT_CANDIDATES]:
        c = scored.candidate
        where = c.document_id + (f" p.{c.page}" if c.page is not None else "")
        text = c.snippet[:SNIPPET_CHARS].replace("</snippet>", "</ snippet>")
        lines.append(f"[{c.cid}] {where}\n<snippet>\n{text}\n</snippet>")
    return "\n".join(lines) or "(none yet)"


async def decide_with_llm(
    context: AgentContext,
    profile: QuestionProfile,
    assessment: Assessment,
    *,
    conversation: str,
    issued: list[str],
    loops_left: int,
    max_queries: int,
) -> LLMDecision | None:
    """Ask the model once (plus one re-ask for unusable output); None when the rules must decide."""
    prompt = Prompt.named(
        "librarian/think.txt",
        context.prompts_dir,
        question=profile.text,
        conversation=conversation or "(none)",
        required_elements=", ".join(profile.required) or "(none detected)",
        candidates=_render_candidates(assessment),
        issued_queries="; ".join(issued[-20:]) or "(none)",
        loops_left=loops_left,
        max_queries=max_queries,
    )
    shown = {s.candidate.cid for s in assessment.ranked[:PROMPT_CANDIDATES]}
    selected = KnownIds("selected", shown, "one of the listed candidate ids", key="id")
    answer = await ask_model(
        context, prompt, LLMDecision, agent="librarian", ids=[selected], check=_notes_problems, fallback="the rules"
    )
    return answer.value


def _notes_problems(decision: LLMDecision) -> list[str]:
    """Selected evidence needs coverage notes: a COMPLETE takes both from the same judgement."""
    if decision.selected and not decision.coverage_notes.strip():
        return ["$.coverage_notes: say what the selected evidence covers and what remains uncertain"]
    return []
