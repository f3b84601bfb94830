"""The model's reflection: one structured call per iteration returning insights and bullet evaluations.

Seed 001 evaluates each used bullet with its own prompt; asking for the evaluations in the same call
keeps an iteration to one round trip. Evaluations must name bullets the trajectory used: others are
re-asked once, then dropped and logged (grounding). `extract_insights` is seed 001's `_extract_insights`:
a reply that is not JSON of the expected shape gives no insights (logged), never an exception.
"""

from __future__ import annotations

import msgspec
import structlog
from langchain_core.messages import HumanMessage

from contracts.ace import BulletEvaluation, Insight
from contracts.common import Usage
from graphs.context import AgentContext
from graphs.llm.structured_output import ainvoke_structured, parse_reply

log = structlog.get_logger(__name__)

DEADLINE_RESERVE_S = 0.15
"""Time kept back from the request deadline, so a slow model ends as an empty reflection (seed 001)
rather than as the whole request timing out."""


class ReflectorReply(msgspec.Struct, kw_only=True):
    """What the reflection prompt asks the model for."""

    insights: list[Insight]
    bullet_evaluations: list[BulletEvaluation] = msgspec.field(default_factory=list)


def extract_insights(llm_response: str) -> list[Insight]:
    """Insights from a reply: `{"insights": [...]}` or a bare list; [] when it is neither (logged)."""
    parsed = parse_reply(llm_response, ReflectorReply)
    if parsed.value is not None:
        return parsed.value.insights
    as_list = parse_reply(llm_response, list[Insight])
    if as_list.value is not None:
        return as_list.value
    log.warning("ace: reflector reply has no usable insights", errors=parsed.errors[:5])
    return []


async def reflect_with_llm(
    context: AgentContext, prompt: str, used_ids: list[str]
) -> tuple[ReflectorReply | None, Usage]:
    """One reflection call; None when the reply was unusable (seed 001: no insights from it).

    Evaluations in the returned reply name only used bullets, the first per bullet.

    Raises:
        ModelFailure: The provider failed (the caller turns this into an empty result).
        ModelTimeout: The model did not answer within the time left.
    """
    assert context.llm is not None
    allowed = set(used_ids)

    def unknown_ids(reply: ReflectorReply) -> list[str]:
        return [
            f"$.bullet_evaluations[{i}].bullet_id: {e.bullet_id!r} is not one of the used bullets "
            f"({', '.join(used_ids) or 'none were used'})"
            for i, e in enumerate(reply.bullet_evaluations)
            if e.bullet_id not in allowed
        ]

    deadline = None if context.deadline is None else context.deadline - DEADLINE_RESERVE_S
    result = await ainvoke_structured(
        context.llm,
        [HumanMessage(prompt)],
        ReflectorReply,
        cfg=context.llm_config,
        deadline=deadline,
        max_reasks=1,
        check=unknown_ids,
    )
    reply = result.value
    if reply is None:
        log.warning("ace: reflector reply unusable", errors=result.errors[:5])
        return None, result.usage
    dropped = [e.bullet_id for e in reply.bullet_evaluations if e.bullet_id not in allowed]
    if dropped:
        log.warning("ace: dropped evaluations of bullets that were not used", dropped=dropped[:20])
    evaluations: dict[str, BulletEvaluation] = {}
    for evaluation in reply.bullet_evaluations:
        if evaluation.bullet_id in allowed:
            evaluations.setdefault(evaluation.bullet_id, evaluation)
    return ReflectorReply(insights=reply.insights, bullet_evaluations=list(evaluations.values())), result.usage
