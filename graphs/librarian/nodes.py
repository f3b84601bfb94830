"""The Librarian's think step: `think`, the graph's one node, and the plain functions it is made of.

A think step reads the request and answers it, in an order that never varies: `validate` (loop limit,
question), `ingest` (the candidate pool), `judge` (the rules' assessment and the model's decision),
then `act`, which writes the one action the step answers: a SEARCH (`plan_queries`), COMPLETE
(`select_evidence`) or ERROR (`fail`), chosen by `routing.choose_action`. Each is a function rather
than a node of its own: each always follows the one before, and a LangGraph step (about 0.2 ms, plus
a branch to choose the action) costs more than several of them; as one graph step, a think step
costs about 0.4 ms less (`python -m bench.step_breakdown`), some 8 % of a model-backed step.

`think` is `async def`: it awaits the model and the pool's deadline checks, and LangGraph runs a sync
node of an async graph in a thread pool, a thread hop that would cost more than most of the step.
"""

from __future__ import annotations

import msgspec
import structlog
from langgraph.runtime import Runtime

from contracts.common import ErrorResponse
from contracts.librarian import (
    CompleteAction,
    LibrarianRequest,
    LibrarianState,
    MissingElement,
    SearchAction,
)
from contracts.limits import LIBRARIAN
from graphs.context import AgentContext
from graphs.librarian.assessment import Assessment, ScoredCandidate, assess
from graphs.librarian.candidates import CandidatePool, build_pool_async
from graphs.librarian.history_check import chain_digest, query_digest
from graphs.librarian.llm_step import decide_with_llm
from graphs.librarian.loop_limit import no_evidence_error, pinned_loop_limit, rounds_left
from graphs.librarian.query_planning import (
    QueryPlan,
    fresh_text,
    fresh_vector,
    plan_first,
    plan_follow_up,
    split_budget,
)
from graphs.librarian.question import profile_question
from graphs.librarian.routing import choose_action
from graphs.librarian.selection import coverage_notes, group_evidence, select_minimal
from graphs.librarian.state import LibrarianGraphState
from graphs.request_limits import clip_each
from graphs.text.normalize import normalize

log = structlog.get_logger(__name__)

MAX_HINT_LOCATIONS = 50


async def think(state: LibrarianGraphState, runtime: Runtime[AgentContext]) -> LibrarianGraphState:
    """One think step as one graph step: `validate`, `ingest`, `judge`, then `act` writes the `outcome`."""
    context = runtime.context
    update = validate(state)
    update["pool"] = await ingest(state["request"], context)
    update.update(await judge({**state, **update}, context))
    update["outcome"] = act({**state, **update}, context)
    return update


def act(state: LibrarianGraphState, context: AgentContext) -> SearchAction | CompleteAction | ErrorResponse:
    """The step's action (`routing.choose_action`); a search with no fresh query left finishes with what there is."""
    action = choose_action(state)
    if action == "plan_queries":
        search = plan_queries(state, context)
        if search is not None:
            return search
        log.info("librarian: no fresh query left to try")
        action = "select_evidence" if state["assessment"].usable else "fail"
    return select_evidence(state, context) if action == "select_evidence" else fail(state, context)


def validate(state: LibrarianGraphState) -> LibrarianGraphState:
    """Fix the loop limit (the runner's `check` already verified the history) and analyse the question."""
    request = state["request"]
    return {
        "loop_limit": pinned_loop_limit(request, state.get("prior")),
        "profile": profile_question(request.user_query),
        "issued": _issued_queries(state),
        "decision": None,
    }


async def ingest(request: LibrarianRequest, context: AgentContext) -> CandidatePool:
    """Fold the whole history into the deduplicated candidate pool, in chunks that stop at the deadline."""
    threshold = context.librarian.near_dup_threshold
    return await build_pool_async(request.search_history, near_dup_threshold=threshold, checkpoint=context.checkpoint)


def _issued_queries(state: LibrarianGraphState) -> list[str]:
    """Every query already run or asked for (normalised, first-seen order): never to be issued again."""
    prior = state.get("prior")
    issued = list(prior.issued_queries) if prior else []
    for round_ in state["request"].search_history:
        issued += [normalize(q) for q in (*round_.queries_text, *round_.queries_vector)]
    return list(dict.fromkeys(q for q in issued if q))


def _conversation(state: LibrarianGraphState) -> str:
    turns = state["request"].conversation[-6:]
    return "\n".join(f"{t.role}: {t.content[:500]}" for t in turns)


async def judge(state: LibrarianGraphState, context: AgentContext) -> LibrarianGraphState:
    """Judge sufficiency and name what is missing: rules always, plus one model call when a model is configured."""
    assessment = assess(state["profile"], state["pool"])
    if context.llm is None:
        return {"assessment": assessment}
    request = state["request"]
    decision = await decide_with_llm(
        context,
        state["profile"],
        assessment,
        conversation=_conversation(state),
        issued=state["issued"],
        loops_left=rounds_left(len(request.search_history), state["loop_limit"]),
        max_queries=request.constraints.max_queries,
    )
    if decision is not None:
        assessment = Assessment(
            ranked=assessment.ranked,
            sufficient=decision.sufficient and bool(assessment.usable),
            missing=decision.missing,
            covered_terms=assessment.covered_terms,
            token_weights=assessment.token_weights,
        )
    return {"assessment": assessment, "decision": decision}


def _bounded(missing: list[MissingElement]) -> list[MissingElement]:
    """The missing elements as the contract takes them back in state: a bounded number, each description cut."""
    return [
        msgspec.structs.replace(m, description=m.description[: LIBRARIAN.text_chars])
        for m in missing[: LIBRARIAN.missing_items]
    ]


def _history_digest(state: LibrarianGraphState) -> str:
    """The hash chain over the whole history, extending the prior state's chain by the newest round.

    The runner's `check` (`verify_continuation`) has already proved the prior digest is the chain of every
    round but the last, so only the newest round is encoded and hashed again.
    """
    history = state["request"].search_history
    prior = state.get("prior")
    if prior is not None and history and len(history) == prior.rounds_seen + 1:
        return chain_digest(history[-1:], start=prior.history_digest)
    return chain_digest(history)


def _next_state(state: LibrarianGraphState, *, issued: list[str]) -> LibrarianState:
    request = state["request"]
    return LibrarianState(
        rounds_seen=len(request.search_history),
        max_loops=state["loop_limit"],
        history_digest=_history_digest(state),
        query_digest=query_digest(request.user_query, request.subject_id),
        subject_id=request.subject_id,
        issued_queries=issued[-200:],
        missing=_bounded(state["assessment"].missing),
        covered=state["assessment"].covered_terms[:50],
    )


def _plan(state: LibrarianGraphState, context: AgentContext) -> QueryPlan:
    request = state["request"]
    profile = state["profile"]
    issued = set(state["issued"])
    max_queries = request.constraints.max_queries
    decision = state.get("decision")
    if decision is not None:
        # The model's queries are held to the same contract as the rules': no question words, no repeats
        # (in any order), and no vector query that is merely the question copied.
        text, vector = split_budget(
            fresh_text(decision.queries_text, issued),
            fresh_vector(decision.queries_vector, issued | {request.user_query}),
            max_queries,
        )
        if text or vector:
            return QueryPlan(queries_text=text, queries_vector=vector, rationale=decision.rationale or "model plan")
    if not request.search_history:
        plan = plan_first(profile, max_queries=max_queries, issued=issued)
    else:
        plan = plan_follow_up(profile, state["assessment"].missing, max_queries=max_queries, issued=issued)
    if decision is not None and (plan.queries_text or plan.queries_vector):
        wrote = decision.queries_text or decision.queries_vector
        why = "every query the model wrote was already issued" if wrote else "the model wrote no query"
        context.meter.fell_back(agent="librarian", reason=f"{why}; the rules' queries were used")
    return plan


def plan_queries(state: LibrarianGraphState, context: AgentContext) -> SearchAction | None:
    """The next SEARCH; None when no fresh query is left to issue."""
    plan = _plan(state, context)
    if not plan.queries_text and not plan.queries_vector:
        return None
    request = state["request"]
    # Each place once (two versions of a chunk are one place to exclude), at most MAX_HINT_LOCATIONS of them.
    places = list(dict.fromkeys(c.location for c in state["pool"].candidates))
    hints: dict[str, object] = {}
    if places:
        hints["exclude_seen"] = [
            {"document_id": d, "page": p, "chunk_id": c} for d, p, c in places[:MAX_HINT_LOCATIONS]
        ]
    top_docs = list(dict.fromkeys(s.candidate.document_id for s in state["assessment"].usable[:3]))
    if top_docs:
        hints["prefer_documents"] = top_docs
    # What the caller sends back (queries in search_history, the rest in state) must fit the request
    # contract: a query written from a long question is cut, never a reason for the next call's 422.
    queries_text = clip_each(plan.queries_text, LIBRARIAN.written_query_chars)
    queries_vector = clip_each(plan.queries_vector, LIBRARIAN.written_query_chars)
    issued = [*state["issued"], *(normalize(q) for q in (*queries_text, *queries_vector))]
    return SearchAction(
        request_id=request.request_id,
        queries_text=queries_text,
        queries_vector=queries_vector,
        filters_hint=hints,
        rationale=plan.rationale[: LIBRARIAN.text_chars],
        missing=_bounded(state["assessment"].missing),
        state=context.seal(_next_state(state, issued=issued)),
        usage=context.usage,
    )


def _model_selection(state: LibrarianGraphState) -> list[tuple[ScoredCandidate, str]]:
    """The model's chosen candidates (deduplicated, at most `max_evidence`), each with the model's reason."""
    decision = state.get("decision")
    if decision is None or not decision.selected:
        return []
    by_id = {s.candidate.cid: s for s in state["assessment"].ranked}
    chosen: dict[str, tuple[ScoredCandidate, str]] = {}
    for selected in decision.selected:
        if selected.id in by_id:
            chosen.setdefault(selected.id, (by_id[selected.id], selected.why_relevant.strip()))
    return list(chosen.values())[: state["request"].constraints.max_evidence]


def select_evidence(state: LibrarianGraphState, context: AgentContext) -> CompleteAction:
    """COMPLETE with the minimal strongest set, grouped per document.

    The evidence, its `why_relevant` and the `coverage_notes` come from one judgement: the model's
    selection with the model's reasons and notes, or the rules' selection with the rules' reasons
    and notes, never the rules' reasons beside the model's verdict.
    """
    request = state["request"]
    profile = state["profile"]
    assessment = state["assessment"]
    decision = state.get("decision")
    by_model = _model_selection(state)
    if by_model and decision is not None:
        reasons = {scored.candidate.cid: why for scored, why in by_model}
        evidence = group_evidence(
            profile, [scored for scored, _ in by_model], assessment.token_weights, reasons=reasons
        )
        notes = decision.coverage_notes.strip()
    else:
        selected = select_minimal(
            profile, assessment, max_evidence=request.constraints.max_evidence, history=request.search_history
        )
        evidence = group_evidence(profile, selected, assessment.token_weights)
        notes = coverage_notes(profile, assessment, selected)
        if decision is not None:
            context.meter.fell_back(
                agent="librarian", reason="the model selected no evidence; the rules' selection and notes were used"
            )
    return CompleteAction(
        request_id=request.request_id,
        evidence=evidence,
        coverage_notes=notes,
        state=context.seal(_next_state(state, issued=state["issued"])),
        usage=context.usage,
    )


def fail(state: LibrarianGraphState, context: AgentContext) -> ErrorResponse:
    """ERROR: the loop limit was reached (or no query is left) and nothing usable was found."""
    request = state["request"]
    error_type, message = no_evidence_error(len(request.search_history), state["loop_limit"])
    token = context.seal(_next_state(state, issued=state["issued"]))
    return ErrorResponse(
        request_id=request.request_id, error_type=error_type, message=message, state=token, usage=context.usage
    )
