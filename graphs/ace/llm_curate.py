"""The model's curator: one structured call turning the reflection into ADD/UPDATE/DELETE deltas.

The prompt shows the sections, the reflection and the existing bullets most related to its insights
(hybrid search per insight, bounded), so it stays small whatever the playbook size. Deltas naming a bullet
that is not in the playbook, or a section the dataset does not allow, are re-asked once, then dropped and
logged (grounding); the survivors go through the same deterministic merge as the heuristic's.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import structlog
from langchain_core.messages import HumanMessage

from contracts.ace import DeltaContextItem, Playbook, ReflectionResult, SearchQuery
from contracts.common import Usage
from graphs.ace.heuristic_curate import lesson_of
from graphs.ace.hybrid_search import HybridSearch
from graphs.ace.prompts import dataset_prompt
from graphs.ace.sections import SectionRules
from graphs.context import AgentContext
from graphs.llm.structured_output import ainvoke_structured

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


def delta_issues(deltas: list[ModelDelta], playbook: Playbook, rules: SectionRules) -> list[tuple[int, str]]:
    """Every delta not grounded in the playbook and the dataset's sections: (index, re-ask message)."""
    existing = {b.id for b in playbook.bullets}
    issues = []
    for i, delta in enumerate(deltas):
        if delta.type == "ADD":
            if not rules.allows(delta.section):
                issues.append((i, f"$.deltas[{i}].section: {delta.section!r} is not one of the listed sections"))
            if not delta.content.strip():
                issues.append((i, f"$.deltas[{i}].content: an ADD needs content"))
        elif delta.bullet_id not in existing:
            issues.append((i, f"$.deltas[{i}].bullet_id: {delta.bullet_id!r} is not the id of an existing bullet"))
        elif delta.type == "UPDATE" and not delta.content.strip():
            issues.append((i, f"$.deltas[{i}].content: an UPDATE needs the full new content"))
    return issues


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
) -> tuple[list[DeltaContextItem] | None, Usage]:
    """Ask the model once (plus one re-ask); None when it gave nothing usable.

    Raises:
        ModelFailure: The provider failed.
        ModelTimeout: The model did not answer within the deadline.
    """
    assert context.llm is not None
    prompt = dataset_prompt("curator", rules.dataset, context.prompts_dir).format(
        dataset=rules.dataset,
        sections=rules.describe() or "(any)",
        query=reflection.trajectory_query,
        insights=render_insights(reflection),
        evaluations="\n".join(f"[{e.bullet_id}] {e.tag}: {e.reason}" for e in reflection.bullet_evaluations)
        or "(none)",
        bullets=await related_bullets(reflection, playbook, search),
    )
    result = await ainvoke_structured(
        context.llm,
        [HumanMessage(prompt)],
        CuratorReply,
        cfg=context.llm_config,
        deadline=context.deadline,
        max_reasks=1,
        check=lambda reply: [message for _, message in delta_issues(reply.deltas, playbook, rules)],
    )
    reply = result.value
    if reply is None:
        log.warning("ace: curator reply unusable, curating with the heuristic engine", errors=result.errors[:5])
        return None, result.usage
    invalid = {i for i, _ in delta_issues(reply.deltas, playbook, rules)}
    if invalid:
        log.warning(
            "ace: dropped ungrounded deltas from the model",
            dropped=[
                f"{reply.deltas[i].type} {reply.deltas[i].bullet_id or reply.deltas[i].section}"
                for i in sorted(invalid)
            ],
        )
    sections = {b.id: b.section for b in playbook.bullets}
    deltas = []
    for i, delta in enumerate(reply.deltas[:MAX_DELTAS]):
        if i in invalid:
            continue
        fields = msgspec.structs.asdict(delta)
        if delta.type != "ADD" and delta.bullet_id is not None:
            fields["section"] = sections[delta.bullet_id]  # the bullet's own section, whatever the model wrote
        else:
            fields["bullet_id"] = None  # the merge assigns ADD ids
        try:
            deltas.append(msgspec.convert(fields, DeltaContextItem))
        except msgspec.ValidationError as exc:
            log.warning("ace: dropped a model delta that breaks the contract", error=str(exc))
    return deltas, result.usage
