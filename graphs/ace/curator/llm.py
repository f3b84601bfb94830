"""The model's curator: one structured call turning the reflection into ADD/UPDATE/DELETE deltas.

The prompt shows the sections, the reflection and the existing bullets most related to its insights
(hybrid search per insight, bounded), so it stays small whatever the playbook size. Deltas naming a bullet
that is not in the playbook, or a section the dataset does not allow, are re-asked once, then dropped and
logged (grounding); an ADD or UPDATE without content after the re-ask makes the reply unusable. The
survivors go through the same deterministic merge as the heuristic's.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import structlog

from contracts.ace import DeltaContextItem, Playbook, ReflectionResult, SearchQuery
from graphs.ace.curator.heuristic import lesson_of
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.prompts import dataset_prompt
from graphs.ace.search.hybrid import HybridSearch
from graphs.context import AgentContext
from graphs.llm.ask import Prompt, ask_model
from graphs.llm.grounding import KnownIds

log = structlog.get_logger(__name__)

RELATED_PER_INSIGHT = 5
MAX_RELATED = 30
MAX_BULLET_CHARS = 1_000
MAX_DELTAS = 50
MAX_PROMPT_INSIGHTS = 20
MAX_INSIGHT_FIELD_CHARS = 2_000
"""Bounds on the reflection shown to the model (a caller may send 50 insights of 20,000-character fields)."""


class ModelDelta(msgspec.Struct, kw_only=True):
    """A delta as the model writes it (the contract's limits are applied after grounding)."""

    type: Literal["ADD", "UPDATE", "DELETE"]
    section: str = ""
    bullet_id: str | None = None
    content: str = ""
    reasoning: str = ""


class CuratorReply(msgspec.Struct, kw_only=True):
    """What the curator prompt asks the model for."""

    deltas: list[ModelDelta] = msgspec.field(default_factory=list)


def delta_rules(playbook: Playbook, rules: SectionRules) -> list[KnownIds]:
    """Where deltas name ids: UPDATE/DELETE an existing bullet, ADD a section the dataset allows."""
    existing = KnownIds(
        "deltas",
        {b.id for b in playbook.bullets},
        "the id of an existing bullet",
        key="bullet_id",
        when=lambda d: d.type != "ADD",
    )
    if rules.permissive:
        return [existing]
    sections = KnownIds("deltas", set(rules.names), "one of the listed sections", key="section", when=_is_add)
    return [existing, sections]


def _is_add(delta: ModelDelta) -> bool:
    return delta.type == "ADD"


def content_problems(reply: CuratorReply) -> list[str]:
    """ADD and UPDATE carry the bullet's full text; without it a delta cannot be applied."""
    return [
        f"$.deltas[{i}].content: an {d.type} needs the bullet's full content"
        for i, d in enumerate(reply.deltas)
        if d.type != "DELETE" and not d.content.strip()
    ]


def render_insights(reflection: ReflectionResult) -> str:
    """The insights as JSON, at most MAX_PROMPT_INSIGHTS with each field cut to MAX_INSIGHT_FIELD_CHARS."""
    shown = [
        {name: value[:MAX_INSIGHT_FIELD_CHARS] for name, value in msgspec.structs.asdict(insight).items()}
        for insight in reflection.insights[:MAX_PROMPT_INSIGHTS]
    ]
    return msgspec.json.encode(shown).decode()


async def related_bullets(reflection: ReflectionResult, playbook: Playbook, search: HybridSearch) -> str:
    """Existing bullets closest to the insights (and the evaluated ones), one `[id] (section) content` line each."""
    chosen: dict[str, str] = {}
    by_id = {b.id: b for b in playbook.bullets}
    for evaluation in reflection.bullet_evaluations:
        bullet = by_id.get(evaluation.bullet_id)
        if bullet is not None:
            chosen.setdefault(bullet.id, f"[{bullet.id}] ({bullet.section}) {bullet.content[:MAX_BULLET_CHARS]}")
    for insight in reflection.insights:
        lesson = lesson_of(insight) or insight.reasoning
        if not lesson.strip():
            continue
        query = SearchQuery(query_text=lesson[:8_000], top_k=RELATED_PER_INSIGHT, min_confidence=0.0)
        for hit in await search.asearch(query, playbook):
            b = hit.bullet
            chosen.setdefault(b.id, f"[{b.id}] ({b.section}) {b.content[:MAX_BULLET_CHARS]}")
    return "\n".join(list(chosen.values())[:MAX_RELATED]) or "(the playbook is empty)"


async def curate_with_llm(
    context: AgentContext,
    reflection: ReflectionResult,
    playbook: Playbook,
    rules: SectionRules,
    search: HybridSearch,
) -> list[DeltaContextItem] | None:
    """Ask the model once (plus one re-ask); None when the heuristic curator must do.

    Raises:
        ModelFailure: The provider failed.
        ModelTimeout: The model did not answer within the deadline.
    """
    prompt = Prompt(
        dataset_prompt("curator", rules.dataset, context.prompts_dir),
        {
            "dataset": rules.dataset,
            "sections": rules.describe() or "(any)",
            "query": reflection.trajectory_query,
            "insights": render_insights(reflection),
            "evaluations": "\n".join(f"[{e.bullet_id}] {e.tag}: {e.reason}" for e in reflection.bullet_evaluations)
            or "(none)",
            "bullets": await related_bullets(reflection, playbook, search),
        },
    )
    answer = await ask_model(
        context,
        prompt,
        CuratorReply,
        agent="ace.curator",
        ids=delta_rules(playbook, rules),
        check=content_problems,
        fallback="the heuristic curator",
    )
    if answer.value is None:
        return None
    sections = {b.id: b.section for b in playbook.bullets}
    deltas = []
    for delta in answer.value.deltas[:MAX_DELTAS]:
        fields = msgspec.structs.asdict(delta)
        if delta.type != "ADD" and delta.bullet_id is not None:
            fields["section"] = sections[delta.bullet_id]  # the bullet's own section, whatever the model wrote
        else:
            fields["bullet_id"] = None  # the merge assigns ADD ids
        try:
            deltas.append(msgspec.convert(fields, DeltaContextItem))
        except msgspec.ValidationError as exc:
            log.warning("ace: dropped a model delta that breaks the contract", error=str(exc))
    return deltas
