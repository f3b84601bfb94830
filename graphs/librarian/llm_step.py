"""The LLM engine's think step: one structured call that evaluates the evidence and plans the next search.

Seed 003 §2.2 asks for evaluation and reflection; doing both in one call (not one per snippet)
keeps a step to one round trip. The prompt is bounded whatever the history length: only the
top candidates by the heuristic ranking are shown, each snippet truncated. Ids the model names
that are not in the pool are re-asked once, then dropped and logged (grounding).
"""

from __future__ import annotations

import msgspec
import structlog
from langchain_core.messages import HumanMessage

from contracts.common import Usage
from contracts.librarian import MissingElement
from graphs.context import AgentContext
from graphs.librarian.assessment import Assessment
from graphs.librarian.question import QuestionProfile
from graphs.llm.structured_output import ainvoke_structured
from graphs.prompt_files import render_prompt

log = structlog.get_logger(__name__)

PROMPT_CANDIDATES = 12
"""Candidates shown to the model, best first by the heuristic ranking (bounds the prompt)."""
SNIPPET_CHARS = 700
"""Characters of each snippet shown to the model."""


class LLMSelected(msgspec.Struct, kw_only=True):
    """A candidate the model chose, by pool id."""

    id: str
    why_relevant: str = ""


class LLMDecision(msgspec.Struct, kw_only=True):
    """What the model decided in one call."""

    sufficient: bool
    missing: list[MissingElement] = msgspec.field(default_factory=list)
    selected: list[LLMSelected] = msgspec.field(default_factory=list)
    queries_text: list[str] = msgspec.field(default_factory=list)
    queries_vector: list[str] = msgspec.field(default_factory=list)
    rationale: str = ""
    coverage_notes: str = ""


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
) -> tuple[LLMDecision | None, Usage]:
    """Ask the model once (plus one re-ask for unusable output); None when it gave nothing usable."""
    assert context.llm is not None
    shown = {s.candidate.cid for s in assessment.ranked[:PROMPT_CANDIDATES]}
    prompt = render_prompt(
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

    def unknown_ids(decision: LLMDecision) -> list[str]:
        return [
            f"$.selected[{i}].id: {s.id!r} is not one of the listed candidate ids"
            for i, s in enumerate(decision.selected)
            if s.id not in shown
        ]

    result = await ainvoke_structured(
        context.llm,
        [HumanMessage(prompt)],
        LLMDecision,
        cfg=context.llm_config,
        deadline=context.deadline,
        max_reasks=1,
        check=unknown_ids,
    )
    decision = result.value
    if decision is None:
        log.warning("librarian: model output unusable, falling back to the heuristic engine", errors=result.errors)
        return None, result.usage
    dropped = [s.id for s in decision.selected if s.id not in shown]
    if dropped:
        log.warning("librarian: dropped ids the model invented", dropped=dropped)
        decision.selected = [s for s in decision.selected if s.id in shown]
    return decision, result.usage
