"""The ACE nodes: async functions from the graph state (and run context) to an update.

Every node (and router) is `async def`, as in every agent: under `ainvoke` LangGraph runs a sync node or
a sync branch function through `run_in_executor`, a thread-pool hop per call (see `graphs/ace/routing.py`).

`prepare_*` nodes validate one endpoint's request and turn it into the common keys; the others are shared
by the generator, reflector, curator and workflow graphs (see `graph.py`). Each engine decision is the
same: with no chat model configured (`context.llm is None`) the embedded heuristic engine answers; with
one, the model does, and an unusable reply falls back to the heuristic (the response's `produced_by`
says which). Provider failures propagate as `ModelFailure`/`ModelTimeout` (HTTP 200 ERROR), except in
the reflector, which seed 001 makes return an empty result instead.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import structlog
from langgraph.runtime import Runtime

from contracts.ace import (
    MAX_BULLETS,
    AceCurateRequest,
    AceGenerateRequest,
    AceReflectRequest,
    AnswerAction,
    BulletEvaluation,
    CuratedAction,
    ModelProblem,
    Playbook,
    ReflectionAction,
    ReflectionResult,
    SearchQuery,
    WorkflowRequest,
    WorkflowResponse,
)
from graphs.ace.checks import playbook_problems
from graphs.ace.curator.heuristic import propose_deltas as heuristic_deltas
from graphs.ace.curator.llm import curate_with_llm
from graphs.ace.curator.merge import MergeOutcome, apply_evaluations, merge
from graphs.ace.generator.heuristic import generate_extractive
from graphs.ace.generator.llm import generate_with_llm
from graphs.ace.heuristic_text import stem
from graphs.ace.playbook.ids import COUNTER_PATH
from graphs.ace.playbook.sections import SectionRules, curate_dataset, reflect_dataset, section_rules
from graphs.ace.playbook.store import PlaybookCorrupt, PlaybookStore
from graphs.ace.reflector.heuristic import reflect_by_rules
from graphs.ace.reflector.llm import reflect_with_llm
from graphs.ace.reflector.prompt import ReflectorPromptBuilder
from graphs.ace.search.hybrid import HybridSearch
from graphs.ace.state import AceGraphState
from graphs.context import AgentContext
from graphs.llm.ask import failure_reason
from graphs.llm.errors import ModelFailure, ModelTimeout
from graphs.text.tokenize import content_tokens

log = structlog.get_logger(__name__)

MAX_INSIGHTS = 50


def _search(runtime: Runtime[AgentContext]) -> HybridSearch:
    return HybridSearch(runtime.context.embeddings, alpha=runtime.context.ace.search_alpha, budget=runtime.context)


# --- request preparation ----------------------------------------------------------------------------


async def prepare_generate(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Set the search up (the runner's `check` already validated the playbook and the section filter)."""
    request = state["request"]
    assert isinstance(request, AceGenerateRequest)
    rules = section_rules(runtime.context.sections, request.dataset)
    query = SearchQuery(
        query_text=request.query,
        top_k=request.top_k,
        section_filter=request.section_filter,
        min_confidence=request.min_confidence,
    )
    return {
        "dataset": request.dataset,
        "rules": rules,
        "playbook": request.playbook,
        "query": query,
    }


async def prepare_reflect(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Set the reflection up; the dataset defaults to the trajectory's."""
    request = state["request"]
    assert isinstance(request, AceReflectRequest)
    dataset = reflect_dataset(request)
    rules = section_rules(runtime.context.sections, dataset)
    return {
        "dataset": dataset,
        "rules": rules,
        "playbook": request.playbook,
        "trajectory": request.trajectory,
        "ground_truth": request.ground_truth,
        "test_report": request.test_report,
        "max_iterations": request.max_iterations,
    }


async def prepare_curate(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Set the curation up (the runner's `check` already validated playbook, evaluations and deltas)."""
    request = state["request"]
    assert isinstance(request, AceCurateRequest)
    dataset = curate_dataset(request)
    rules = section_rules(runtime.context.sections, dataset)
    return {
        "dataset": dataset,
        "rules": rules,
        "playbook": request.playbook,
        "reflection": request.reflection,
        "client_deltas": request.deltas,
        "max_bullets": request.max_bullets or MAX_BULLETS,  # the result must fit the contract to come back
        "dedup_threshold": request.dedup_threshold or runtime.context.ace.dedup_threshold,
    }


async def load_playbook(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Seed 000 §10: read the dataset's playbook from the store (missing → empty; corrupt → PlaybookCorrupt)."""
    request = state["request"]
    assert isinstance(request, WorkflowRequest)
    options = runtime.context.ace
    playbook = await asyncio.to_thread(PlaybookStore(options.playbook_data_dir).load, request.dataset)
    rules = section_rules(runtime.context.sections, request.dataset)
    _check_stored(playbook, rules, request.dataset)
    return {
        "dataset": request.dataset,
        "rules": rules,
        "playbook": playbook,
        "query": SearchQuery(query_text=request.query),
        "ground_truth": request.ground_truth or "",
        "test_report": request.test_report or "",
        "max_iterations": 1,
        "client_deltas": [],
        "max_bullets": MAX_BULLETS,
        "dedup_threshold": options.dedup_threshold,
        "save": request.save,
        "saved": False,
    }


def _check_stored(playbook: Playbook, rules: SectionRules, dataset: str) -> None:
    problems = playbook_problems(playbook, rules, "$")
    if problems:
        raise PlaybookCorrupt(f"stored playbook {dataset!r} breaks the section rules: {problems[0].message}")


# --- generator ----------------------------------------------------------------------------------------


async def search(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Hybrid search of the playbook for the query."""
    return {"hits": await _search(runtime).asearch(state["query"], state["playbook"])}


async def generate(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Answer from the hits: the model when configured (extractive fallback), else extractively."""
    query, dataset, hits = state["query"].query_text, state["dataset"], state["hits"]
    size = len(state["playbook"].bullets)
    context = runtime.context
    if context.llm is not None:
        generated = await generate_with_llm(context, query, dataset, hits)
        if generated is not None:
            return {"generated": generated, "trajectory": generated.trajectory, "generated_by": context.engine}
    weights = await _search(runtime).aterm_weights(state["playbook"], content_tokens(query), key=stem)
    generated = generate_extractive(query, dataset, size, hits, weights)
    return {"generated": generated, "trajectory": generated.trajectory, "generated_by": "heuristic"}


async def respond_answer(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """ANSWER: the answer, its trajectory and the search results it was built from."""
    generated = state["generated"]
    outcome = AnswerAction(
        request_id=state["request_id"],
        answer=generated.answer,
        trajectory=generated.trajectory,
        search_results=[hit.to_result() for hit in state["hits"]],
        produced_by=state["generated_by"],
        usage=runtime.context.usage,
    )
    return {"outcome": outcome}


# --- reflector ----------------------------------------------------------------------------------------


async def resolve_bullets(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Seed 001: the used ids' bullets from the playbook; unknown ids are skipped (and logged)."""
    by_id = {b.id: b for b in state["playbook"].bullets}
    wanted = list(dict.fromkeys(state["trajectory"].used_bullet_ids))
    skipped = [i for i in wanted if i not in by_id]
    if skipped:
        log.warning("ace: trajectory names bullets the playbook does not have; skipped", skipped=skipped[:20])
    return {
        "used": [by_id[i] for i in wanted if i in by_id],
        "skipped": skipped,
        "iteration": 0,
        "insights": [],
        "evaluations": [],
        "converged": False,
        "model_problem": None,
        "reflected_by": "heuristic",
    }


async def reflect(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """One reflection iteration: insights and one evaluation per used bullet."""
    trajectory, used = state["trajectory"], state["used"]
    ground_truth, test_report = state["ground_truth"], state["test_report"]
    context = runtime.context
    # The rules compare the answer and the ground truth with every used bullet: up to a second of CPU at
    # the request limits, so on a worker thread (one hop, the texts read once) where the event loop keeps
    # answering others. The lesson is the rules' own only without a model.
    rule_evaluations, insights = await asyncio.to_thread(
        reflect_by_rules, trajectory, ground_truth, test_report, used, with_insights=context.llm is None
    )
    iteration = state["iteration"] + 1
    if context.llm is None:
        # The rules do not refine: a second pass would repeat the first.
        return {"insights": insights, "evaluations": rule_evaluations, "iteration": iteration, "converged": True}
    prompt = ReflectorPromptBuilder(context.prompts_dir).prompt(
        trajectory,
        ground_truth,
        test_report,
        used,
        state["dataset"],
        previous_insights=state["insights"] if state["iteration"] else None,
    )
    first = state["iteration"] == 0
    try:
        reply = await reflect_with_llm(context, prompt, [b.id for b in used], first=first)
    except ModelFailure as exc:
        kind: Literal["TIMEOUT", "MODEL_FAILURE"] = "TIMEOUT" if isinstance(exc, ModelTimeout) else "MODEL_FAILURE"
        log.warning("ace: reflection model failed; returning what earlier iterations found", error_type=kind)
        if first:  # nothing from the model at all: the (empty) result is the rules' (seed 001)
            context.meter.fell_back(agent="ace.reflector", reason=failure_reason(exc), attempts=exc.attempts)
        return {"model_problem": ModelProblem(error_type=kind, message=str(exc)), "converged": True}
    if reply is None:  # seed 001: an unparsable reply gives no insights; the rules still evaluate the bullets
        if not first:
            return {"converged": True}  # keep the last good iteration
        return {"evaluations": rule_evaluations, "converged": True, "iteration": 1}
    by_id = {e.bullet_id: e for e in reply.bullet_evaluations}
    evaluations: list[BulletEvaluation] = [by_id.get(rule.bullet_id, rule) for rule in rule_evaluations]
    return {
        "insights": reply.insights[:MAX_INSIGHTS],
        "evaluations": evaluations,
        "iteration": iteration,
        "converged": state["iteration"] > 0 and reply.insights == state["insights"],
        "reflected_by": context.engine,
    }


async def finish_reflection(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """The ReflectionResult; empty when the model failed before any iteration completed (seed 001)."""
    failed_first = state.get("model_problem") is not None and state["iteration"] == 0
    reflection = ReflectionResult(
        insights=[] if failed_first else state["insights"],
        bullet_evaluations=[] if failed_first else state["evaluations"],
        trajectory_query=state["trajectory"].query,
        trajectory_dataset=state["dataset"],
        iteration_count=state["iteration"],
    )
    return {"reflection": reflection}


async def respond_reflection(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """REFLECTION: the result, the skipped ids and any model problem."""
    outcome = ReflectionAction(
        request_id=state["request_id"],
        reflection=state["reflection"],
        skipped_bullet_ids=state["skipped"],
        model_problem=state.get("model_problem"),
        produced_by=state["reflected_by"],
        usage=runtime.context.usage,
    )
    return {"outcome": outcome}


# --- curator -----------------------------------------------------------------------------------------


async def update_counters(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """One helpful/harmful vote per evaluation."""
    before = state["playbook"]
    after = apply_evaluations(before, state["reflection"].bullet_evaluations)
    return {"playbook": after, "counters_changed": after is not before}


FALLBACK_MIN_BUDGET_S = 0.05
"""Below this much time left, a failed curator model ends the step as TIMEOUT instead of falling back."""


async def propose_deltas(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """The curator's own deltas: the model's when configured (heuristic fallback), else the heuristic's.

    A model that fails (provider error, or its own timeout while the request still has time) must not
    cost the caller the deterministic part of curation: the counters are already applied, the caller's
    deltas still merge, and the curator's rules propose the deltas instead; `notes` says so. Only when
    the request's own deadline is spent does the step end as TIMEOUT.
    """
    context = runtime.context
    reflection, playbook, rules = state["reflection"], state["playbook"], state["rules"]
    notes: list[str] = []
    if context.llm is not None:
        try:
            deltas = await curate_with_llm(context, reflection, playbook, rules, _search(runtime))
        except ModelFailure as exc:
            left = context.remaining_s()
            if left is not None and left < FALLBACK_MIN_BUDGET_S:
                raise
            kind = "TIMEOUT" if isinstance(exc, ModelTimeout) else "MODEL_FAILURE"
            context.meter.fell_back(agent="ace.curator", reason=failure_reason(exc), attempts=exc.attempts)
            notes.append(
                f"the curator's model failed ({kind}: {exc}): the counters and the caller's deltas are applied, "
                "and the curator's deltas come from its rules (heuristic engine)"
            )
        else:
            if deltas is not None:
                return {"proposed": deltas, "curated_by": context.engine}
    proposed = await heuristic_deltas(reflection, playbook, rules, _search(runtime))
    return {"proposed": proposed, "curated_by": "heuristic", "curate_notes": notes}


async def _merge(
    state: AceGraphState, runtime: Runtime[AgentContext], playbook: Playbook, *, counters_changed: bool
) -> MergeOutcome:
    """The caller's deltas first (validated against its playbook), then the curator's; then the budget."""
    query = state["reflection"].trajectory_query
    return await merge(
        playbook,
        [*state["client_deltas"], *state["proposed"]],
        rules=state["rules"],
        embeddings=runtime.context.embeddings,
        dedup_threshold=state["dedup_threshold"],
        max_bullets=state["max_bullets"],
        source=f"{state['request_id']}: {query[:200]}",
        counters_changed=counters_changed,
        reserved_ids=_request_ids(state),
        counter_path="$.dataset" if isinstance(state.get("request"), WorkflowRequest) else COUNTER_PATH,
        budget=runtime.context,
        caller_deltas=len(state["client_deltas"]),
    )


def _request_ids(state: AceGraphState) -> list[str]:
    """The used ids of the request's trajectory: none of them may be issued to a new bullet.

    The caller's deltas add nothing here: an UPDATE or DELETE names a bullet of the playbook (checked), and
    the contract says an ADD's `bullet_id` is ignored, so it must not move the counter either.
    """
    request = state.get("request")
    named: list[str] = []
    if isinstance(request, AceCurateRequest) and request.trajectory is not None:
        named += request.trajectory.used_bullet_ids
    trajectory = state.get("trajectory")
    if trajectory is not None:
        named += trajectory.used_bullet_ids
    return named


async def merge_deltas(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Merge into the request's (or the loaded) playbook, counters already applied."""
    merged = await _merge(state, runtime, state["playbook"], counters_changed=state.get("counters_changed", False))
    return {"merged": merged}


async def respond_curated(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """CURATED: the applied deltas and the new playbook."""
    merged = state["merged"]
    outcome = CuratedAction(
        request_id=state["request_id"],
        deltas=merged.applied,
        playbook=merged.playbook,
        pruned_bullet_ids=merged.pruned,
        notes=[*state.get("curate_notes", []), *merged.notes],
        produced_by=state["curated_by"],
        usage=runtime.context.usage,
    )
    return {"outcome": outcome}


# --- workflow ----------------------------------------------------------------------------------------


async def save_playbook(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Apply this run's votes and deltas to the stored playbook as it is now, under its lock, and save it.

    Other runs (in this process or another instance sharing the data directory) may have saved since this
    one loaded the playbook. Replaying the evaluations and the deltas onto the fresh copy keeps their
    lessons as well as this run's, and new ids continue from the fresh high-water mark; the response
    reports the deltas as they were applied to it.
    """
    store = PlaybookStore(runtime.context.ace.playbook_data_dir)
    dataset, evaluations = state["dataset"], state["reflection"].bullet_evaluations

    async def replay(fresh: Playbook) -> tuple[Playbook, MergeOutcome]:
        if not store.exists(dataset):
            raise PlaybookCorrupt(f"stored playbook {dataset!r} was removed while this run was learning")
        _check_stored(fresh, state["rules"], dataset)
        counted = apply_evaluations(fresh, evaluations)
        outcome = await _merge(state, runtime, counted, counters_changed=counted is not fresh)
        return outcome.playbook, outcome

    saved, merged = await store.update(dataset, replay, deadline=runtime.context.deadline)
    merged.playbook = saved
    return {"merged": merged, "saved": True}


async def respond_workflow(state: AceGraphState, runtime: Runtime[AgentContext]) -> AceGraphState:
    """Seed 000 §11's response, plus the reflection and deltas of a learning run."""
    generated = state["generated"]
    merged = state.get("merged")
    outcome = WorkflowResponse(
        request_id=state["request_id"],
        llm_response=generated.answer,
        search_results_count=len(state["hits"]),
        used_bullet_ids=generated.trajectory.used_bullet_ids,
        reflection=state.get("reflection"),
        deltas=merged.applied if merged else [],
        playbook_saved=state.get("saved", False),
        notes=[*state.get("curate_notes", []), *merged.notes] if merged else [],
        produced_by=state["generated_by"],
        usage=runtime.context.usage,
    )
    return {"outcome": outcome}
