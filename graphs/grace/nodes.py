"""GRACE's nodes: plain functions from the graph state (and run context) to an update.

Each node does one thing of seed 002 §8: plan, take the caller's search results or the user's answer,
judge a result's confidence, ask, replan, pick the next step, reason, finish. Nodes append progress
records to `events` (numbered later, in `run`); the three nodes that end a request set `outcome` and
leave `session` waiting for exactly the answer that outcome asks for.

Nodes are `async def` even where they never await: LangGraph runs sync nodes of an async graph in a
thread pool, and a thread hop per node costs more than these steps do.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import msgspec
import structlog
from langgraph.runtime import Runtime

from contracts.common import ErrorResponse
from contracts.grace import (
    Citation,
    ConfidenceFactors,
    EventType,
    GraceAskUserAction,
    GraceCompleteAction,
    GraceEvent,
    GraceSearchAction,
    GraceSource,
    GraceState,
    Pending,
    PlanStep,
    ReplanRecord,
    StepResult,
    UserInput,
)
from graphs.context import AgentContext
from graphs.grace.confidence import ScoredText, certain, measure, score_step
from graphs.grace.intervention import OPTIONS, adjust_thresholds, initial_thresholds
from graphs.grace.llm_reasoning import answer_with_llm
from graphs.grace.planner import create_plan
from graphs.grace.protocol import session_collections
from graphs.grace.reasoning import Answer, Material, extractive_answer, gather
from graphs.grace.replan import Trigger, replan, trigger_for
from graphs.grace.search_results import as_scored, search_result
from graphs.grace.state import Cursor, CursorKind, GraceGraphState
from graphs.grace.wording import say
from graphs.text.tokenize import terms

log = structlog.get_logger(__name__)

_CURSOR_FOR_ACTION: dict[str, CursorKind] = {"rag_search": "search", "ask_user": "question", "reasoning": "reason"}


def _event(kind: EventType, message: str, **fields: object) -> GraceEvent:
    """A progress record; `index` is assigned when the step's events are collected (`run`)."""
    return GraceEvent(index=0, type=kind, message=message, **fields)  # type: ignore[arg-type]


def _step(session: GraceState, step_id: int | None) -> PlanStep:
    return next(s for s in session.plan.steps if s.step_id == step_id)


# --- entry nodes ----------------------------------------------------------------------------------


async def make_plan(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """First call: choose the collections, plan (seed 002 §8.1) and open the session."""
    context = runtime.context
    request = state["request"]
    query = (request.query or "").strip()
    collections = session_collections(request, context.grace)
    planned = await create_plan(
        context, query, collections, caller_steps=request.plan_steps, confirm=request.confirm_plan
    )
    plan = planned.plan
    session = GraceState(
        query=query,
        collections=collections,
        plan=plan,
        thresholds=initial_thresholds(context.grace),
        max_step_id=max(s.step_id for s in plan.steps),
        turn=1,
    )
    message = say("ev_plan_created", query, count=len(plan.steps), complexity=plan.complexity)
    events = [_event("plan_created", f"{message} [{planned.source}]")]
    if planned.fallback is not None:
        events.insert(0, _event("plan_fallback", say("ev_plan_fallback", query, reason=planned.fallback)))
    return {"session": session, "events": events}


async def take_tool_result(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """The caller ran the pending SEARCH: record the step's result, keep its evidence, score it."""
    session = state["session"]
    tool_result = state["request"].tool_result
    assert tool_result is not None  # protocol.check_request
    assert session.pending is not None
    step = _step(session, session.pending.step_id)
    result, evidence = search_result(step, tool_result, runtime.context.grace, session.thresholds, session.query)
    session = msgspec.structs.replace(
        session, results=[*session.results, result], evidence=[*session.evidence, *evidence], pending=None
    )
    finished = _event(
        "step_finished",
        say("ev_step_finished", session.query, step_id=step.step_id, status=result.status),
        step_id=step.step_id,
        status=result.status,
        confidence=result.confidence,
    )
    return {"session": session, "result": result, "events": [finished]}


async def take_user_response(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """The user answered the pending ASK_USER: apply feedback, then PROCEED / MODIFY / CANCEL (seed 002 §8.4)."""
    session = state["session"]
    response = state["request"].user_response
    pending = session.pending
    assert response is not None  # protocol.check_request
    assert pending is not None
    kind = pending.ask_kind
    events = [
        _event(
            "user_response",
            say("ev_user_response", session.query, decision=response.decision),
            step_id=pending.step_id,
        )
    ]
    thresholds = session.thresholds
    if response.feedback is not None and kind in ("CONFIRM", "ESCALATE"):
        thresholds = adjust_thresholds(thresholds, response.feedback, runtime.context.grace)
        events.append(
            _event(
                "thresholds_adjusted",
                say(
                    "ev_thresholds_adjusted",
                    session.query,
                    feedback=response.feedback,
                    silent=thresholds.silent,
                    notify=thresholds.notify,
                    confirm=thresholds.confirm,
                ),
            )
        )
    session = msgspec.structs.replace(session, thresholds=thresholds, pending=None)
    text = (response.input or "").strip()
    update: GraceGraphState = {"events": events, "trigger": None}
    if response.decision == "PROCEED":
        session = _proceed(session, kind, pending.step_id, text)
    elif response.decision == "MODIFY":
        step = _step(session, pending.step_id) if pending.step_id is not None else None
        update["trigger"] = Trigger(kind="USER_MODIFY", step=step, reason=text, user_input=text or None)
    else:
        update["finish"] = "cancelled"
    update["session"] = session
    return update


def _proceed(session: GraceState, kind: str | None, step_id: int | None, text: str) -> GraceState:
    """What PROCEED means for each kind of question."""
    if kind == "PLAN":
        return msgspec.structs.replace(session, plan_confirmed=True)
    if step_id is None:
        return session
    inputs = [*session.user_inputs, UserInput(step_id=step_id, text=text)] if text else session.user_inputs
    if kind == "QUESTION":
        answered = StepResult(
            step_id=step_id,
            action="ask_user",
            status="success",
            output=say("user_answer", session.query, text=text),
            confidence=1.0,
            detail=certain("ask_user", session.thresholds),
        )
        return msgspec.structs.replace(session, results=[*session.results, answered], user_inputs=inputs)
    if kind == "ESCALATE" and text and _step(session, step_id).action == "reasoning":
        # The answer is worked out again with what the user added (once: see routing.route_after_judge).
        return msgspec.structs.replace(
            session,
            results=[r for r in session.results if r.step_id != step_id],
            citations=[c for c in session.citations if c.step_id != step_id],
            user_inputs=inputs,
        )
    return msgspec.structs.replace(session, user_inputs=inputs)


# --- executor loop --------------------------------------------------------------------------------


async def judge(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """Report a fresh result's confidence and decision; name a replan trigger when the result calls for one."""
    session = state["session"]
    result = state["result"]
    assert result is not None
    assert result.detail is not None
    detail = result.detail
    step = _step(session, result.step_id)
    replans_left = state["max_replans"] - len(session.replans)
    events = [
        _event(
            "confidence",
            say("ev_confidence", session.query, step_id=step.step_id, score=detail.score),
            step_id=step.step_id,
            confidence=detail.score,
        ),
        _event(
            "decision",
            say("ev_decision", session.query, step_id=step.step_id, decision=detail.decision),
            step_id=step.step_id,
            decision=detail.decision,
        ),
    ]
    if detail.decision == "NOTIFY":
        events.append(
            _event(
                "notify",
                say("ev_notify", session.query, step_id=step.step_id, score=detail.score),
                step_id=step.step_id,
                confidence=detail.score,
                decision="NOTIFY",
            )
        )
    return {"trigger": trigger_for(result, step, replans_left=replans_left), "events": events}


async def advance(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """Find the next step in dependency order, skipping (and recording) steps whose dependencies did not succeed."""
    session = state["session"]
    plan = session.plan
    if plan.requires_confirmation and not session.plan_confirmed:
        return {"cursor": Cursor(kind="plan")}
    answered = {r.step_id for r in session.results}
    succeeded = {r.step_id for r in session.results if r.status == "success"}
    skipped: list[StepResult] = []
    events: list[GraceEvent] = []
    cursor = Cursor(kind="done")
    for step in plan.steps:
        if step.step_id in answered:
            continue
        missing = [d for d in step.depends_on if d not in succeeded]
        if missing:
            skipped.append(StepResult(step_id=step.step_id, action=step.action, status="skipped"))
            answered.add(step.step_id)
            events.append(
                _event(
                    "step_skipped",
                    say("ev_step_skipped", session.query, step_id=step.step_id, missing=missing[0]),
                    step_id=step.step_id,
                    status="skipped",
                )
            )
            continue
        cursor = Cursor(kind=_CURSOR_FOR_ACTION[step.action], step=step)
        if cursor.kind == "reason":  # announced here, before the (possibly slow) model call, so a stream shows it
            events.append(_started(session, step))
        break
    session = msgspec.structs.replace(session, results=[*session.results, *skipped])
    return {"session": session, "cursor": cursor, "events": events}


def _started(session: GraceState, step: PlanStep) -> GraceEvent:
    return _event(
        "step_started",
        say("ev_step_started", session.query, step_id=step.step_id, description=step.description or step.query),
        step_id=step.step_id,
    )


async def reason(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """Run a `reasoning` step: the model's cited answer, or the extractive one (seed 002 §8.6 ReasoningTool)."""
    context = runtime.context
    session = state["session"]
    step = state["cursor"].step
    assert step is not None
    material = gather(step, session)
    events: list[GraceEvent] = []
    answer: Answer | None = None
    if context.llm is not None and (material.evidence or material.user_inputs):
        answer = await answer_with_llm(context, session.query, step, material)
        if answer is None:
            events.append(_event("fallback_answer", say("ev_fallback_answer", session.query), step_id=step.step_id))
    if answer is None:
        answer = extractive_answer(session.query, material, max_sentences=context.grace.executor.answer_sentences)
    detail = score_step(_answer_factors(answer), "reasoning", context.grace, session.thresholds)
    result = StepResult(
        step_id=step.step_id,
        action="reasoning",
        status="success",
        output=answer.text,
        confidence=detail.score,
        sources=list(dict.fromkeys(e.document_id for e in answer.cited)),
        detail=detail,
    )
    citation = Citation(step_id=step.step_id, evidence=[session.evidence.index(e) for e in answer.cited])
    session = msgspec.structs.replace(
        session, results=[*session.results, result], citations=[*session.citations, citation]
    )
    events.append(
        _event(
            "step_finished",
            say("ev_step_finished", session.query, step_id=step.step_id, status="success"),
            step_id=step.step_id,
            status="success",
            confidence=detail.score,
        )
    )
    return {"session": session, "result": result, "events": events}


def _answer_factors(answer: Answer) -> ConfidenceFactors:
    """Confidence factors of an answer: its sources (the user's words count as fully relevant), its self-evaluation."""
    sources = as_scored(answer.support or answer.cited) + [
        ScoredText(document_id=f"user-input-{u.step_id}", text=u.text, score=1.0) for u in answer.cited_inputs
    ]
    return measure(sources, self_eval=answer.self_eval)


async def replan_node(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """Replace the plan after a trigger (seed 002 §8.5), unless the session has used all its replans."""
    session = state["session"]
    trigger = state["trigger"]
    assert trigger is not None
    limit = state["max_replans"]
    if len(session.replans) >= limit:
        message = say("ev_replan_limit", session.query, limit=limit)
        return {"replanned": False, "finish": "replan_limit", "events": [_event("replan_limit", message)]}
    replanned = await replan(runtime.context, session, trigger)
    plan = replanned.plan
    record = ReplanRecord(
        trigger=trigger.kind,
        strategy=replanned.strategy,
        step_id=trigger.step.step_id if trigger.step else None,
        turn=session.turn,
    )
    session = msgspec.structs.replace(
        session,
        plan=plan,
        replans=[*session.replans, record],
        max_step_id=max(session.max_step_id, *(s.step_id for s in plan.steps)),
    )
    message = say(
        "ev_replanned", session.query, strategy=replanned.strategy, trigger=trigger.kind, count=len(plan.steps)
    )
    return {
        "session": session,
        "replanned": True,
        "trigger": None,
        "events": [_event("replanned", message, strategy=replanned.strategy, step_id=record.step_id)],
    }


# --- nodes that end the request -------------------------------------------------------------------


async def emit_search(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """SEARCH: hand the next `rag_search` step to the caller and wait for its `tool_result`."""
    session = state["session"]
    step = state["cursor"].step
    assert step is not None
    assert step.collection is not None
    session = msgspec.structs.replace(session, pending=Pending(kind="SEARCH", step_id=step.step_id, turn=session.turn))
    reply = partial(
        GraceSearchAction,
        request_id=state["request"].request_id,
        turn=session.turn,
        step_id=step.step_id,
        query=step.query,
        collection=step.collection,
        keywords=terms(step.query),
        top_k=runtime.context.grace.executor.top_k,
        rationale=step.description,
        plan=session.plan,
    )
    return {"session": session, "reply": reply, "events": [_started(session, step)]}


async def ask_question(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """ASK_USER for an `ask_user` step (kind QUESTION) or for approval of the plan (kind PLAN)."""
    session = state["session"]
    cursor = state["cursor"]
    events: list[GraceEvent] = []
    if cursor.kind == "plan" or cursor.step is None:
        pending = Pending(kind="ASK_USER", step_id=None, ask_kind="PLAN", turn=session.turn)
        question = say("ask_plan", session.query, count=len(session.plan.steps))
    else:
        pending = Pending(kind="ASK_USER", step_id=cursor.step.step_id, ask_kind="QUESTION", turn=session.turn)
        question = cursor.step.description or cursor.step.query
        events.append(_started(session, cursor.step))
    session = msgspec.structs.replace(session, pending=pending)
    reply = partial(
        GraceAskUserAction,
        request_id=state["request"].request_id,
        turn=session.turn,
        kind=pending.ask_kind or "QUESTION",
        question=question,
        options=list(OPTIONS),
        step=cursor.step,
        result=None,
        confidence=None,
        plan=session.plan,
    )
    return {"session": session, "reply": reply, "events": events}


async def ask_intervention(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """ASK_USER for a result at CONFIRM (approve it) or ESCALATE (add information) (seed 002 §4.4)."""
    session = state["session"]
    result = state["result"]
    assert result is not None
    assert result.detail is not None
    decision = result.detail.decision
    assert decision in ("CONFIRM", "ESCALATE")
    step = _step(session, result.step_id)
    key = "ask_confirm" if decision == "CONFIRM" else "ask_escalate"
    question = say(
        key, session.query, step_id=step.step_id, description=step.description or step.query, score=result.confidence
    )
    session = msgspec.structs.replace(
        session, pending=Pending(kind="ASK_USER", step_id=step.step_id, ask_kind=decision, turn=session.turn)
    )
    reply = partial(
        GraceAskUserAction,
        request_id=state["request"].request_id,
        turn=session.turn,
        kind=decision,
        question=question,
        options=list(OPTIONS),
        step=step,
        result=result,
        confidence=result.detail,
        plan=session.plan,
    )
    return {"session": session, "reply": reply}


async def finish(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """COMPLETE with the final answer, overall confidence, cited sources and the step history.

    The answer is the last successful reasoning step's; without one (the plan was cut short), the
    extractive answer over everything gathered. After the replan limit with nothing gathered at all
    the outcome is ERROR LOOP_LIMIT.
    """
    context = runtime.context
    session = state["session"]
    request = state["request"]
    reason = state.get("finish", "completed")
    plan_ids = [s.step_id for s in session.plan.steps]
    results = {r.step_id: r for r in session.results}
    answered = [results[i] for i in plan_ids if i in results and results[i].action == "reasoning"]
    answered = [r for r in answered if r.status == "success"]
    final = answered[-1] if answered else None
    if final is not None:
        text, confidence = final.output, final.confidence
        cited = next((c.evidence for c in session.citations if c.step_id == final.step_id), [])
        sources = [session.evidence[i] for i in cited]
    else:
        material = Material(
            evidence=[e for e in session.evidence if e.step_id in plan_ids],
            user_inputs=list(session.user_inputs),
            context=[],
        )
        if reason == "replan_limit" and not material.evidence and not material.user_inputs:
            session = msgspec.structs.replace(session, done=True, pending=None)
            error = partial(
                ErrorResponse,
                request_id=request.request_id,
                error_type="LOOP_LIMIT",
                message=f"nothing usable was gathered before the replan limit ({state['max_replans']}) was reached",
                usage=context.usage,
            )
            return {"session": session, "reply": error}
        answer = extractive_answer(session.query, material, max_sentences=context.grace.executor.answer_sentences)
        detail = score_step(_answer_factors(answer), "reasoning", context.grace, session.thresholds)
        text, confidence, sources = answer.text, detail.score, answer.cited
    troubled = any(results.get(i) is None or results[i].status != "success" for i in plan_ids)
    status: Literal["completed", "partial", "cancelled"] = "completed"
    if reason == "cancelled":
        status = "cancelled"
    elif reason == "replan_limit" or troubled:
        status = "partial"
    event = (
        _event("cancelled", say("ev_cancelled", session.query))
        if status == "cancelled"
        else _event("completed", say("ev_completed", session.query, score=confidence), confidence=confidence)
    )
    session = msgspec.structs.replace(session, done=True, pending=None)
    reply = partial(
        GraceCompleteAction,
        request_id=request.request_id,
        status=status,
        answer=text,
        confidence=confidence,
        sources=[
            GraceSource(
                document_id=e.document_id,
                snippet=e.snippet,
                step_id=e.step_id,
                page=e.page,
                chunk_id=e.chunk_id,
                score=e.score,
            )
            for e in sources
        ],
        history=list(session.results),
        plan=session.plan,
    )
    return {"session": session, "reply": reply, "events": [event]}


async def respond(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """Build the action the request answers with, once: its fields, the numbered events, usage and state token.

    Events are numbered across the session (continuing the previous state's count), so a UI that
    reconnects can tell which it has seen; the session sealed into the token waits for exactly what
    this action asks for.
    """
    prior = state.get("prior")
    base = prior.event_count if prior is not None else 0
    events = [msgspec.structs.replace(e, index=base + i) for i, e in enumerate(state["events"])]
    session = msgspec.structs.replace(state["session"], event_count=base + len(events))
    token = runtime.context.seal(session)
    reply = state["reply"]
    usage = runtime.context.usage  # the request's meter: every model call of this step, fallbacks included
    if reply.func is ErrorResponse:
        return {"outcome": reply(state=token, usage=usage)}
    return {"outcome": reply(events=events, usage=usage, state=token)}
