"""The model's reflection: one structured call per iteration returning insights and bullet evaluations.

Seed 001 evaluates each used bullet with its own prompt; asking for the evaluations in the same call
keeps an iteration to one round trip. Evaluations must name bullets the trajectory used: others are
re-asked once, then dropped and logged (grounding). `extract_insights` is seed 001's `_extract_insights`:
a reply that is not JSON of the expected shape gives no insights (logged), never an exception.
"""

from __future__ import annotations

import msgspec
import structlog

from contracts.ace import BulletEvaluation, Insight
from graphs.context import AgentContext
from graphs.llm.ask import Prompt, ask_model
from graphs.llm.grounding import KnownIds
from graphs.llm.structured_output import parse_reply

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
    context: AgentContext, prompt: Prompt, used_ids: list[str], *, first: bool
) -> ReflectorReply | None:
    """One reflection call; None when the reply was unusable (seed 001: no insights from it).

    Evaluations in the returned reply name only used bullets, the first per bullet. On the `first`
    iteration an unusable reply is a fallback (the rules evaluate the bullets); later, the previous
    iteration's result stands and nothing falls back.

    Raises:
        ModelFailure: The provider failed (the caller turns this into an empty result).
        ModelTimeout: The model did not answer within the time left.
    """
    used = KnownIds(
        "bullet_evaluations",
        set(used_ids),
        f"one of the used bullets ({', '.join(used_ids) or 'none were used'})",
        key="bullet_id",
    )
    deadline = None if context.deadline is None else context.deadline - DEADLINE_RESERVE_S
    answer = await ask_model(
        context,
        prompt,
        ReflectorReply,
        agent="ace.reflector",
        ids=[used],
        fallback="the rules' bullet evaluations" if first else None,
        deadline=deadline,
    )
    reply = answer.value
    if reply is None:
        return None
    evaluations: dict[str, BulletEvaluation] = {}
    for evaluation in reply.bullet_evaluations:
        evaluations.setdefault(evaluation.bullet_id, evaluation)
    return ReflectorReply(insights=reply.insights, bullet_evaluations=list(evaluations.values()))
