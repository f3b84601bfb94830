"""Dynamic replanning (seed 002 §4.5, §8.5): trigger → strategy → new steps → merge → re-validate.

Triggers: a failed step (the caller's search raised), low confidence (a search that found nothing),
or the user's MODIFY. Strategies:

- FALLBACK: the step is replaced, in place, by its `fallback` action (another collection for a
  search, a question to the user, or an answer from what there is); steps that depended on it now
  depend on the replacement.
- PARTIAL: the completed steps stay; the triggering step and everything after it are regenerated
  (a search with its query reduced to key terms or moved to the next collection; the rest copied).
- FULL: a new plan from scratch for the question plus what the user added.

New steps always get fresh ids (above every id the session has used), so a result can never be
mistaken for another step's. With a model configured, PARTIAL and FULL ask it for the new steps
first and fall back to these rules when its reply is unusable. The merged plan is validated again,
`planner.max_steps` bounding the steps still to run (completed steps run no more); one that fails is
replaced by the template plan after its completed steps, or by the template alone (then FULL).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import structlog

from contracts.grace import (
    MAX_PLAN_STEPS,
    ExecutionPlan,
    GraceState,
    PlanStep,
    ReplanStrategy,
    ReplanTrigger,
    StepResult,
)
from graphs.context import AgentContext
from graphs.grace.complexity import keyword_complexity
from graphs.grace.llm_planning import ReplanRequest, replan_with_llm
from graphs.grace.plan_rules import normalize_steps, plan_errors, renumber
from graphs.grace.planner import (
    answer_step,
    build_plan,
    fill_collections,
    heuristic_steps,
    ranked_collections,
    template_steps,
)
from graphs.grace.wording import say
from graphs.text.normalize import normalize
from graphs.text.tokenize import terms

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Trigger:
    """Why a replan was asked for, and about which step (None: the plan as a whole)."""

    kind: ReplanTrigger
    step: PlanStep | None
    reason: str = ""
    user_input: str | None = None


@dataclass(frozen=True)
class Replanned:
    """The new plan and how it was made."""

    plan: ExecutionPlan
    strategy: ReplanStrategy


def trigger_for(result: StepResult, step: PlanStep, *, replans_left: int) -> Trigger | None:
    """The replan a fresh result calls for: a failed step always; a search that found nothing while replans remain."""
    if result.status == "failed":
        return Trigger(kind="STEP_FAILURE", step=step, reason=result.error or "the step failed")
    found_nothing = result.detail is not None and result.detail.factors.hit_count == 0
    if result.action == "rag_search" and found_nothing and replans_left > 0:
        return Trigger(kind="LOW_CONFIDENCE", step=step, reason="the search returned no hits")
    return None


def choose_strategy(trigger: Trigger, collections: list[str]) -> ReplanStrategy:
    """FALLBACK when the step names a usable fallback, FULL when the user said what to change, else PARTIAL."""
    step = trigger.step
    if trigger.kind == "USER_MODIFY":
        return "FULL" if trigger.user_input or step is None else "PARTIAL"
    if step is None:
        return "FULL"
    has_other_collection = step.collection is not None and len(collections) > 1
    usable = step.fallback is not None and (step.fallback != "rag_search" or has_other_collection)
    if trigger.kind == "STEP_FAILURE":
        return "FALLBACK" if usable else "PARTIAL"
    return "FALLBACK" if step.fallback == "rag_search" and usable else "PARTIAL"


def _next_collection(step: PlanStep, ranked: list[str]) -> str:
    """The collection after the step's in the ranking (wrapping round), for a search moved elsewhere."""
    if step.collection not in ranked:
        return ranked[0]
    return ranked[(ranked.index(step.collection) + 1) % len(ranked)]


def fallback_step(step: PlanStep, new_id: int, session: GraceState, reason: str) -> PlanStep:
    """The replacement a step's `fallback` names."""
    query = session.query
    match step.fallback:
        case "rag_search":
            ranked = ranked_collections(step.query, session.collections)
            collection = _next_collection(step, ranked)
            later = ranked.index(collection) < len(ranked) - 1
            return msgspec.structs.replace(
                step,
                step_id=new_id,
                collection=collection,
                description=say("search_step", query, collection=collection, query=step.query),
                fallback="rag_search" if later else "ask_user",
            )
        case "ask_user":
            question = say(
                "ask_after_failure", query, collection=step.collection or "", error=reason[:200], query=step.query
            )
            return PlanStep(step_id=new_id, action="ask_user", description=question, depends_on=step.depends_on)
        case _:
            return answer_step(new_id, step.query or query, list(step.depends_on))


def _relaxed(step: PlanStep, session: GraceState) -> PlanStep:
    """A search retried differently: the query reduced to its key terms, or else the next collection."""
    reduced = " ".join(terms(step.query))
    if reduced and normalize(reduced) != normalize(step.query):
        return msgspec.structs.replace(
            step,
            query=reduced,
            description=say("search_step", session.query, collection=step.collection or "", query=reduced),
        )
    collection = _next_collection(step, ranked_collections(step.query, session.collections))
    return msgspec.structs.replace(
        step,
        collection=collection,
        description=say("search_step", session.query, collection=collection, query=step.query),
    )


def _completed_ids(session: GraceState) -> set[int]:
    plan_ids = {s.step_id for s in session.plan.steps}
    return {r.step_id for r in session.results if r.status == "success" and r.step_id in plan_ids}


def partial_steps(session: GraceState, trigger: Trigger) -> tuple[list[PlanStep], list[PlanStep]]:
    """(kept, regenerated) for PARTIAL: completed steps stay; the trigger step and all after it are redone."""
    steps = session.plan.steps
    done = _completed_ids(session) - ({trigger.step.step_id} if trigger.step else set())
    start = next((i for i, s in enumerate(steps) if trigger.step and s.step_id == trigger.step.step_id), len(steps))
    kept = [s for s in steps[:start] if s.step_id in done]
    redo: list[PlanStep] = []
    for step in steps[start:]:
        if step.step_id in done:
            kept.append(step)
        elif trigger.step is not None and step.step_id == trigger.step.step_id:
            redo += _regenerate(step, session, trigger)
        else:
            redo.append(step)
    return kept, redo


def _regenerate(step: PlanStep, session: GraceState, trigger: Trigger) -> list[PlanStep]:
    match step.action:
        case "rag_search":
            return [_relaxed(step, session)]
        case "reasoning":
            used = {s.collection for s in session.plan.steps if s.action == "rag_search"}
            ranked = ranked_collections(session.query, session.collections)
            collection = next((c for c in ranked if c not in used), ranked[0])
            search = PlanStep(
                step_id=-step.step_id,  # a placeholder no real step has; renumbered with the others
                action="rag_search",
                query=" ".join(terms(session.query)) or session.query,
                collection=collection,
                description=say("search_step", session.query, collection=collection, query=session.query),
                fallback="ask_user",
            )
            return [search, msgspec.structs.replace(step, depends_on=[*step.depends_on, search.step_id])]
        case _:
            return []  # a question the user chose to replace rather than answer is dropped


def _renumber_new(kept: list[PlanStep], new: list[PlanStep], first_id: int) -> list[PlanStep]:
    """Fresh ids for `new`; dependencies on dropped steps are removed, those on kept steps stay."""
    renumbered = renumber(new, first_id)
    valid = {s.step_id for s in kept} | {s.step_id for s in renumbered}
    return [msgspec.structs.replace(s, depends_on=[d for d in s.depends_on if d in valid]) for s in renumbered]


def _merge_fallback(session: GraceState, step: PlanStep, replacement: PlanStep) -> list[PlanStep]:
    swapped = [replacement if s.step_id == step.step_id else s for s in session.plan.steps]
    return [
        msgspec.structs.replace(s, depends_on=[replacement.step_id if d == step.step_id else d for d in s.depends_on])
        for s in swapped
    ]


async def replan(context: AgentContext, session: GraceState, trigger: Trigger) -> Replanned:
    """The plan after `trigger` (revision + 1), always valid."""
    names = [c.name for c in session.collections]
    strategy = choose_strategy(trigger, names)
    first_id = session.max_step_id + 1
    steps: list[PlanStep] | None = None
    if strategy == "FALLBACK" and trigger.step is not None:
        replacement = fallback_step(trigger.step, first_id, session, trigger.reason)
        steps = _merge_fallback(session, trigger.step, replacement)
    else:
        kept, redo = partial_steps(session, trigger) if strategy == "PARTIAL" else ([], [])
        if context.llm is not None:
            steps = await _model_steps(context, session, trigger, strategy, kept, first_id)
        if steps is None:
            steps = kept + _renumber_new(kept, redo or _fresh_plan(context, session, trigger, first_id), first_id)
    completed = _completed_ids(session)
    kept_ids = [s.step_id for s in steps if s.step_id in completed]  # done: they run no more
    return _finalize(context, session, steps, kept_ids, strategy)


def _fresh_plan(context: AgentContext, session: GraceState, trigger: Trigger, first_id: int) -> list[PlanStep]:
    """FULL on the rules: plan again for the question plus the user's words."""
    query = f"{session.query} {trigger.user_input}".strip() if trigger.user_input else session.query
    cfg = context.grace.planner
    if keyword_complexity(query) >= cfg.complexity_threshold:
        return heuristic_steps(query, session.collections, max_searches=cfg.max_searches, first_id=first_id)
    return template_steps(query, session.collections, first_id=first_id)


async def _model_steps(
    context: AgentContext,
    session: GraceState,
    trigger: Trigger,
    strategy: ReplanStrategy,
    kept: list[PlanStep],
    first_id: int,
) -> list[PlanStep] | None:
    outputs = {r.step_id: r.output for r in session.results}
    request = ReplanRequest(
        query=session.query,
        strategy=strategy,
        trigger=trigger.kind,
        reason=(trigger.user_input or trigger.reason)[:1000],
        completed=[(s, outputs.get(s.step_id, "")) for s in kept],
        failed=trigger.step,
        collections=session.collections,
        first_id=first_id,
        max_new=max(1, context.grace.planner.max_steps - len(kept)),
    )
    new = await replan_with_llm(context, request)
    return None if new is None else kept + fill_collections(new, session.collections)


def _finalize(
    context: AgentContext, session: GraceState, steps: list[PlanStep], kept: list[int], strategy: ReplanStrategy
) -> Replanned:
    """Validate the merged plan; when it does not hold up, the template after the kept steps, else alone.

    `planner.max_steps` bounds the steps still to run: the kept steps are done, so a PARTIAL replan of a
    plan that used every step is not refused for its length (it was replaced by the template, and the
    completed steps' results were dropped under a `replanned PARTIAL` event). When the template must stand
    in, it follows the kept steps and answers from them too; only when even that fails is the replan FULL,
    and it is reported so.
    """
    names = {c.name for c in session.collections}
    limit = min(MAX_PLAN_STEPS, context.grace.planner.max_steps + len(kept))
    ordered = normalize_steps(steps)
    errors = plan_errors(ordered, collections=names, max_steps=limit)
    if errors:
        log.warning("grace: merged plan invalid, using the template", errors=[e.message for e in errors[:5]])
        first_id = session.max_step_id + 1  # the merged plan's new steps never existed
        by_id = {s.step_id: s for s in session.plan.steps}
        after = [by_id[i] for i in kept if i in by_id]
        search, answer = template_steps(session.query, session.collections, first_id=first_id)
        ordered = [*after, search, msgspec.structs.replace(answer, depends_on=[*kept, search.step_id])]
        if not after or plan_errors(ordered, collections=names, max_steps=limit):
            ordered, strategy = [search, answer], "FULL"
    plan = build_plan(
        session.query,
        ordered,
        complexity=session.plan.complexity,
        revision=session.plan.revision + 1,
        requires_confirmation=session.plan.requires_confirmation,
    )
    return Replanned(plan=plan, strategy=strategy)
