"""The model's planning calls: a first plan (prompts/grace/plan.txt) and replacement steps (prompts/grace/replan.txt).

One structured call each, with one re-ask that lists every problem: schema errors from
`ask_model`, plan problems from `plan_rules` (duplicate ids, dependencies on steps that do not
exist or come later, cycles, unknown collections). A plan still wrong after the re-ask is rejected
(value None, with the problems) and the caller falls back to the rule-based plan. Step ids the model
wrote are renumbered, so the ids a response carries are always ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import msgspec

from contracts.grace import MAX_PLAN_STEPS, PlanStep, ReplanStrategy, ReplanTrigger, SearchCollection
from graphs.context import AgentContext
from graphs.grace.chat_model import grace_model
from graphs.grace.plan_rules import as_messages, normalize_steps, plan_errors, renumber
from graphs.llm.ask import AskResult, Prompt, ask_model

Steps = Annotated[list[PlanStep], msgspec.Meta(min_length=1, max_length=MAX_PLAN_STEPS)]


class ModelPlan(msgspec.Struct, kw_only=True):
    """The planner's reply."""

    complexity: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    steps: Steps
    requires_confirmation: bool = False


class ModelReplan(msgspec.Struct, kw_only=True):
    """The replanner's reply: the new steps only."""

    steps: Steps


def describe_collections(collections: Sequence[SearchCollection]) -> str:
    """The collection listing a prompt shows, one per line."""
    return "\n".join(f"- {c.name}: {c.description or '(no description)'}" for c in collections)


async def plan_with_llm(
    context: AgentContext, query: str, collections: Sequence[SearchCollection], *, keyword_complexity: float
) -> AskResult[ModelPlan]:
    """Ask the model for a plan (steps normalised and renumbered); value None when it gave no valid one.

    Raises:
        ModelFailure: The provider failed (the planner falls back to the template).
        ModelTimeout: The model did not answer in time (likewise).
    """
    cfg = context.grace.planner
    names = {c.name for c in collections}
    prompt = Prompt.named(
        "grace/plan.txt",
        context.prompts_dir,
        query=query,
        collections=describe_collections(collections),
        max_steps=cfg.max_steps,
        max_searches=cfg.max_searches,
        keyword_complexity=f"{keyword_complexity:.2f}",
    )

    def problems(plan: ModelPlan) -> list[str]:
        return as_messages(plan_errors(normalize_steps(plan.steps), collections=names, max_steps=cfg.max_steps))

    answer = await ask_model(
        context,
        prompt,
        ModelPlan,
        agent="grace.planner",
        check=problems,
        fallback="the template plan",
        model=grace_model(context),
    )
    if answer.value is None:
        return answer
    plan = msgspec.structs.replace(answer.value, steps=renumber(normalize_steps(answer.value.steps), 1))
    return AskResult(value=plan, usage=answer.usage, reasons=[], attempts=answer.attempts)


@dataclass(frozen=True)
class ReplanRequest:
    """What the replanner is told: the situation and the ids it may use."""

    query: str
    strategy: ReplanStrategy
    trigger: ReplanTrigger
    reason: str
    completed: list[tuple[PlanStep, str]]
    failed: PlanStep | None
    collections: Sequence[SearchCollection]
    first_id: int
    max_new: int


async def replan_with_llm(context: AgentContext, request: ReplanRequest) -> list[PlanStep] | None:
    """Ask the model for the replacement steps; None when it gave no valid ones after a re-ask."""
    names = {c.name for c in request.collections}
    kept = [step for step, _ in request.completed]
    completed = "\n".join(f"[{s.step_id}] {s.action}: {s.description} -> {out[:300]}" for s, out in request.completed)
    prompt = Prompt.named(
        "grace/replan.txt",
        context.prompts_dir,
        query=request.query,
        strategy=request.strategy,
        trigger=request.trigger,
        reason=request.reason or "(none)",
        completed=completed or "(none)",
        failed=msgspec.json.encode(request.failed).decode() if request.failed else "(none)",
        collections=describe_collections(request.collections),
        first_id=request.first_id,
        max_new=request.max_new,
    )

    def problems(reply: ModelReplan) -> list[str]:
        errors = [
            f"$.steps[{i}].step_id: new step ids start at {request.first_id}"
            for i, s in enumerate(reply.steps)
            if s.step_id < request.first_id
        ]
        if len(reply.steps) > request.max_new:
            errors.append(f"$.steps: at most {request.max_new} new steps, got {len(reply.steps)}")
        combined = normalize_steps([*kept, *reply.steps])
        details = plan_errors(combined, collections=names, max_steps=MAX_PLAN_STEPS)
        return errors + as_messages(details)

    answer = await ask_model(
        context,
        prompt,
        ModelReplan,
        agent="grace.replanner",
        check=problems,
        fallback="the rule-based replan",
        model=grace_model(context),
    )
    if answer.value is None:
        return None
    new_ids = {s.step_id for s in answer.value.steps}
    ordered = [s for s in normalize_steps([*kept, *answer.value.steps]) if s.step_id in new_ids]
    return renumber(ordered, request.first_id)
