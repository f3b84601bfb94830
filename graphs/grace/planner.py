"""The Planner (seed 002 §4.1, §8.1): question → complexity → ExecutionPlan, with the safe template as fallback.

Flow: estimate complexity (keywords; with a model, the mean of the keyword and the model's estimate);
a simple question gets the template (search → answer); a complex one gets the model's plan after
validation, or, on the embedded engine, a small multi-search plan from `decompose`. A model plan that
fails validation (after one re-ask naming every problem) is replaced by the template, and so is a
model call that fails (outage, 429 after the retries, timeout) while the request has time left
(seed 002 §4.1). A plan the caller supplied (`plan_steps`) is validated by the protocol check and used
as it is. In either, a search step that names no collection gets the best one for its query (`fill_collections`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from contracts.grace import ExecutionPlan, PlanStep, SearchCollection
from contracts.limits import GRACE
from graphs.context import AgentContext
from graphs.grace.complexity import keyword_complexity
from graphs.grace.decompose import sub_questions
from graphs.grace.llm_planning import plan_with_llm
from graphs.grace.plan_rules import normalize_steps
from graphs.grace.wording import say
from graphs.llm.ask import failure_reason
from graphs.llm.errors import ModelFailure
from graphs.text.tokenize import is_function_token, tokenize

PlanSource = Literal["template", "heuristic", "model", "caller"]


@dataclass(frozen=True)
class PlanOutcome:
    """A plan, where it came from (for events and logs) and, for a fallback, why the model's was not used."""

    plan: ExecutionPlan
    source: PlanSource
    fallback: str | None = None


def plan_id_for(query: str, revision: int) -> str:
    """A deterministic plan id: the same question and revision always get the same id."""
    return f"plan-{hashlib.sha256(query.encode()).hexdigest()[:12]}-r{revision}"


def choose_collection(query: str, collections: Sequence[SearchCollection]) -> str:
    """The collection whose name and description share the most content tokens with the query (first on ties)."""
    wanted = {t for t in tokenize(query) if not is_function_token(t)}
    best, best_score = collections[0].name, 0.0
    for collection in collections:
        offered = {t for t in tokenize(f"{collection.name} {collection.description}") if not is_function_token(t)}
        score = len(wanted & offered) / math.sqrt(len(offered)) if offered else 0.0
        if score > best_score:
            best, best_score = collection.name, score
    return best


def ranked_collections(query: str, collections: Sequence[SearchCollection]) -> list[str]:
    """Collection names best first for the query (the chosen one, then the rest in the caller's order)."""
    first = choose_collection(query, collections)
    return [first, *(c.name for c in collections if c.name != first)]


def search_step(step_id: int, query: str, collections: Sequence[SearchCollection], original: str) -> PlanStep:
    """A `rag_search` step on the best collection; its fallback: another collection if there is one, else the user."""
    collection = choose_collection(query, collections)
    return PlanStep(
        step_id=step_id,
        action="rag_search",
        description=say("search_step", original, collection=collection, query=query),
        query=query,
        collection=collection,
        fallback="rag_search" if len(collections) > 1 else "ask_user",
    )


def answer_step(step_id: int, query: str, depends_on: list[int]) -> PlanStep:
    """The closing `reasoning` step that answers `query` from the outputs of `depends_on`."""
    return PlanStep(
        step_id=step_id,
        action="reasoning",
        description=say("answer_step", query),
        query=query,
        depends_on=depends_on,
    )


def template_steps(query: str, collections: Sequence[SearchCollection], *, first_id: int = 1) -> list[PlanStep]:
    """The seed's safe plan: search the best collection, then answer from what it found."""
    return [search_step(first_id, query, collections, query), answer_step(first_id + 1, query, [first_id])]


def heuristic_steps(
    query: str, collections: Sequence[SearchCollection], *, max_searches: int, first_id: int = 1
) -> list[PlanStep]:
    """The embedded engine's plan for a complex question: one search per sub-question, then one answer."""
    parts = sub_questions(query, limit=max_searches)
    searches = [search_step(first_id + i, part, collections, query) for i, part in enumerate(parts)]
    return [*searches, answer_step(first_id + len(searches), query, [s.step_id for s in searches])]


def fitted(step: PlanStep) -> PlanStep:
    """`step` with its `description` and `query` cut to the contract's `Text` limit (`GRACE.text_chars`).

    The rules write these texts from the question and the user's words: a FULL replan plans for both
    together (a query and an input of 8,000 characters each) and the wording around them adds more. Every
    step travels in the response and in the state the caller sends back, whose schema holds them to the
    limit, so a longer text made the service refuse its own state on the next call (400). Steps from a
    caller or a model already fit (the request's types; `reply_bounds.clip_to_schema`).
    """
    limit = GRACE.text_chars
    if len(step.description) <= limit and len(step.query) <= limit:
        return step
    return msgspec.structs.replace(step, description=step.description[:limit], query=step.query[:limit])


def build_plan(
    query: str, steps: list[PlanStep], *, complexity: float, revision: int = 0, requires_confirmation: bool = False
) -> ExecutionPlan:
    """Wrap validated steps into an ExecutionPlan, their texts `fitted` to the contract.

    Every plan of a session, first or replanned, whoever wrote its steps, is built here: the one place
    where what the rules wrote is held to the limits the state is read back with.
    """
    return ExecutionPlan(
        plan_id=plan_id_for(query, revision),
        original_query=query,
        complexity=round(min(1.0, max(0.0, complexity)), 4),
        steps=[fitted(step) for step in steps],
        requires_confirmation=requires_confirmation,
        revision=revision,
    )


def fill_collections(steps: Sequence[PlanStep], collections: Sequence[SearchCollection]) -> list[PlanStep]:
    """Give every search step without a collection the best one for its query.

    `plan_rules` refuses a collection nobody has, not a missing one: the caller's plan and the model's (first
    plan or replan) name theirs or leave it to this, so every `rag_search` step of a plan names one before a
    SEARCH is built from it (`actions.search`) or a state is issued (`protocol.check_state` refuses it else).
    """
    return [
        msgspec.structs.replace(s, collection=choose_collection(s.query, collections))
        if s.action == "rag_search" and s.collection is None
        else s
        for s in steps
    ]


async def create_plan(
    context: AgentContext,
    query: str,
    collections: Sequence[SearchCollection],
    *,
    caller_steps: Sequence[PlanStep] | None = None,
    confirm: bool = False,
) -> PlanOutcome:
    """The first plan of a session (seed 002 §8.1)."""
    keywords = keyword_complexity(query)
    cfg = context.grace.planner
    if caller_steps is not None:
        steps = fill_collections(normalize_steps(caller_steps), collections)
        return PlanOutcome(build_plan(query, steps, complexity=keywords, requires_confirmation=confirm), "caller")
    if context.llm is None:
        if keywords < cfg.complexity_threshold:
            return PlanOutcome(
                build_plan(
                    query, template_steps(query, collections), complexity=keywords, requires_confirmation=confirm
                ),
                "template",
            )
        steps = heuristic_steps(query, collections, max_searches=cfg.max_searches)
        return PlanOutcome(build_plan(query, steps, complexity=keywords, requires_confirmation=confirm), "heuristic")
    try:
        proposal = await plan_with_llm(context, query, collections, keyword_complexity=keywords)
    except ModelFailure as exc:
        # Seed 002 §4.1: whatever stopped the model, the safe search → answer plan still works,
        # as long as the request has time left to run it.
        if context.remaining_s() == 0:
            raise
        reason = failure_reason(exc)
        context.meter.fell_back(
            agent="grace.planner", reason=f"{reason}, the template plan used", attempts=exc.attempts
        )
        plan = build_plan(query, template_steps(query, collections), complexity=keywords, requires_confirmation=confirm)
        return PlanOutcome(plan, "template", fallback=reason)
    if proposal.value is None:
        plan = build_plan(query, template_steps(query, collections), complexity=keywords, requires_confirmation=confirm)
        return PlanOutcome(plan, "template", fallback=f"unusable output: {proposal.reasons[0]}")
    complexity = (keywords + proposal.value.complexity) / 2
    if complexity < cfg.complexity_threshold:
        plan = build_plan(
            query, template_steps(query, collections), complexity=complexity, requires_confirmation=confirm
        )
        return PlanOutcome(plan, "template")
    plan = build_plan(
        query,
        fill_collections(proposal.value.steps, collections),
        complexity=complexity,
        requires_confirmation=confirm or proposal.value.requires_confirmation,
    )
    return PlanOutcome(plan, "model")
