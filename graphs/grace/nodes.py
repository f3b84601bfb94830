"""GRACE's nodes and the moves they are made of: functions from the graph state (and run context) to a `Command`.

A request does a few things of seed 002 §8 in a row: take what it brings (plan a first call, or take the
caller's search results or the user's answer), reason and replan as the plan needs, and end with an
action (SEARCH, ASK_USER, COMPLETE). The domain work lives in the modules named for it (`planner`,
`search_results`, `intervention`, `replan`, `reasoning`, `executor`, `final_answer`, `actions`). Each
move here reads the state, calls them, reports progress records in `events` and says where to go
(`Command[Route]`), the choice made by a pure router (`routing`).

Only the moves that can be followed by another (`take_request`'s three entries, `reason`, `replan`) are
graph nodes; the graph declares where each can go, so the flow reads in `build_graph`. Everything else
is a function a node calls, because a LangGraph step costs more than each of these jobs (about 0.2 ms
a step, `python -m bench.step_breakdown`) and a request is only a handful of them:
- the entry (`routing.route_entry`: `make_plan`, `take_tool_result` or `take_user_response`), in the
  `take_request` node;
- `_judged` (a fresh result's confidence events, replan trigger and route) and `_advance` (on to the
  plan's next step);
- the four endings (`emit_search`, `ask_question`, `ask_intervention`, `finish`: `ENDINGS`), which
  `_settle` runs in the node that reaches one, then ends the run; they do no I/O, so the progress
  records a stream relays come no later than before;
- `_respond` (number the step's events, seal the state, build the action), which every ending ends with;
- reasoning by the embedded engine (no model, no I/O): `_settle` runs it in the node that reaches it.

Nodes are `async def` even where they never await: LangGraph runs sync nodes of an async graph in a
thread pool, and a thread hop per node costs more than these steps do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec
from langgraph.runtime import Runtime
from langgraph.types import Command

from contracts.grace import (
    Citation,
    Feedback,
    GraceEvent,
    GraceState,
    PlanStep,
    ReplanRecord,
    StepResult,
)
from graphs.context import AgentContext
from graphs.grace import actions
from graphs.grace.events import event, step_started
from graphs.grace.executor import next_step
from graphs.grace.final_answer import final_answer
from graphs.grace.intervention import adjust_thresholds, initial_thresholds, proceed
from graphs.grace.llm_reasoning import answer_with_llm
from graphs.grace.planner import create_plan
from graphs.grace.protocol import session_collections
from graphs.grace.reasoning import Answer, answer_confidence, extractive_answer, gather
from graphs.grace.replan import Trigger, replan, trigger_for
from graphs.grace.routing import route_after_advance, route_after_judge, route_after_user_response, route_entry
from graphs.grace.search_results import search_result
from graphs.grace.state import GraceGraphState
from graphs.grace.wording import figure, levels, say


def _step(session: GraceState, step_id: int | None) -> PlanStep:
    return next(s for s in session.plan.steps if s.step_id == step_id)


NextStep = Literal["emit_search", "ask_question", "reason", "finish"]
"""Where the executor goes once it knows the next step: `routing.route_after_advance`."""
Judged = Literal["replan", "ask_intervention", NextStep]
"""Where a fresh result leads once judged: `routing.route_after_judge`, then on to the next step."""
Ending = Literal["emit_search", "ask_question", "ask_intervention", "finish"]
"""The four ways a request ends (`ENDINGS`), each with its action."""
Onward = Literal["reason", "replan", "__end__"]
"""Where a node goes once `_settle` has run an ending: another node, or the end of the run (`RUN_END`)."""
RUN_END: Literal["__end__"] = "__end__"
"""LangGraph's `END`, typed as the literal it is (a test checks they are the same)."""


def _advance(state: GraceGraphState, update: GraceGraphState) -> tuple[GraceGraphState, NextStep]:
    """The update with the plan's next step found (`executor.next_step`) and its events added; where to go.

    Every node after which the plan goes on ends with this instead of routing to a node of its own:
    finding the next step needs no I/O, and a graph step costs more than finding it does.
    """
    session, cursor, events = next_step(update["session"] if "session" in update else state["session"])
    advanced: GraceGraphState = {
        **update,
        "session": session,
        "cursor": cursor,
        "events": [*update.get("events", []), *events],
    }
    return advanced, route_after_advance(advanced)


# --- the entry --------------------------------------------------------------------------------------


async def take_request(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[Onward]:
    """The graph's first node: a first call plans; a later one takes what its state waits for.

    One node calling the entry that applies (`routing.route_entry`) rather than a conditional edge to
    three nodes: the edge costs LangGraph about as much as another graph step.
    """
    move = await ENTRIES[route_entry(state)](state, runtime)
    return await _settle(state, runtime, move)


async def make_plan(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[NextStep]:
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
    complexity = figure(plan.complexity, (context.grace.planner.complexity_threshold,))
    message = say("ev_plan_created", query, count=len(plan.steps), complexity=complexity)
    events = [event("plan_created", f"{message} [{planned.source}]")]
    if planned.fallback is not None:
        events.insert(0, event("plan_fallback", say("ev_plan_fallback", query, reason=planned.fallback)))
    update, goto = _advance(state, {"session": session, "events": events})
    return Command(update=update, goto=goto)


async def take_tool_result(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[Judged]:
    """The caller ran the pending SEARCH: record the step's result, keep its evidence, score and judge it."""
    session = state["session"]
    tool_result = state["request"].tool_result
    assert tool_result is not None  # protocol.check_request
    assert session.pending is not None
    step = _step(session, session.pending.step_id)
    result, evidence = search_result(step, tool_result, runtime.context.grace, session.thresholds, session.query)
    session = msgspec.structs.replace(
        session, results=[*session.results, result], evidence=[*session.evidence, *evidence], pending=None
    )
    finished = event(
        "step_finished",
        say("ev_step_finished", session.query, step_id=step.step_id, status=result.status),
        step_id=step.step_id,
        status=result.status,
        confidence=result.confidence,
    )
    return _judged(state, session, result, [finished])


async def take_user_response(
    state: GraceGraphState, runtime: Runtime[AgentContext]
) -> Command[Literal["replan", NextStep]]:
    """The user answered the pending ASK_USER: apply feedback, then PROCEED / MODIFY / CANCEL (seed 002 §8.4)."""
    session = state["session"]
    response = state["request"].user_response
    pending = session.pending
    assert response is not None  # protocol.check_request
    assert pending is not None
    kind = pending.ask_kind
    text = (response.input or "").strip()
    events = [_user_response_event(session.query, response.decision, text, pending.step_id)]
    if response.feedback is not None and kind in ("CONFIRM", "ESCALATE"):
        session, adjusted = _apply_feedback(session, response.feedback, runtime.context)
        events += adjusted
    session = msgspec.structs.replace(session, pending=None)
    update: GraceGraphState = {"events": events, "trigger": None}
    if response.decision == "PROCEED":
        session = proceed(session, kind, pending.step_id, text)
    elif response.decision == "MODIFY":
        step = _step(session, pending.step_id) if pending.step_id is not None else None
        update["trigger"] = Trigger(kind="USER_MODIFY", step=step, reason=text, user_input=text or None)
    else:
        update["finish"] = "cancelled"
    update["session"] = session
    route = route_after_user_response(state)
    if route == "advance":
        update, goto = _advance(state, update)
        return Command(update=update, goto=goto)
    return Command(update=update, goto=route)


def _user_response_event(query: str, decision: str, text: str, step_id: int | None) -> GraceEvent:
    """The user's decision, quoting what they typed whatever they decided: a CANCEL's reason has no other record."""
    if text:
        return event(
            "user_response", say("ev_user_response_input", query, decision=decision, input=text), step_id=step_id
        )
    return event("user_response", say("ev_user_response", query, decision=decision), step_id=step_id)


def _apply_feedback(
    session: GraceState, feedback: Feedback, context: AgentContext
) -> tuple[GraceState, list[GraceEvent]]:
    """The thresholds moved by the user's feedback, and the event saying so (none when at a bound nothing moved)."""
    thresholds = adjust_thresholds(session.thresholds, feedback, context.grace)
    if thresholds == session.thresholds:
        return session, []
    levels = {name: figure(getattr(thresholds, name), exact=True) for name in ("silent", "notify", "confirm")}
    message = say("ev_thresholds_adjusted", session.query, feedback=feedback, **levels)
    return msgspec.structs.replace(session, thresholds=thresholds), [event("thresholds_adjusted", message)]


# --- executor loop --------------------------------------------------------------------------------


def _judged(
    state: GraceGraphState, session: GraceState, result: StepResult, events: list[GraceEvent]
) -> Command[Judged]:
    """After a fresh result: report its confidence and decision, name a replan trigger if it calls for one, route.

    Shared by the two nodes that produce a result (`take_tool_result`, `reason`) rather than a node of
    its own: the judgement needs no I/O, and a graph step costs more than the judgement does.
    """
    assert result.detail is not None
    detail = result.detail
    step = _step(session, result.step_id)
    replans_left = state["max_replans"] - len(session.replans)
    shown = figure(detail.score, levels(session.thresholds))
    events = [
        *events,
        event(
            "confidence",
            say("ev_confidence", session.query, step_id=step.step_id, score=shown),
            step_id=step.step_id,
            confidence=detail.score,
        ),
        event(
            "decision",
            say("ev_decision", session.query, step_id=step.step_id, decision=detail.decision),
            step_id=step.step_id,
            decision=detail.decision,
        ),
    ]
    if detail.decision == "NOTIFY":
        events.append(
            event(
                "notify",
                say("ev_notify", session.query, step_id=step.step_id, score=shown),
                step_id=step.step_id,
                confidence=detail.score,
                decision="NOTIFY",
            )
        )
    trigger = trigger_for(result, step, replans_left=replans_left)
    update: GraceGraphState = {"session": session, "result": result, "trigger": trigger, "events": events}
    route = route_after_judge({**state, **update})
    if route == "advance":
        update, goto = _advance(state, update)
        return Command(update=update, goto=goto)
    return Command(update=update, goto=route)


async def reason(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[Onward]:
    """Run a `reasoning` step, judge its result and go on (`_reasoned`)."""
    return await _settle(state, runtime, await _reasoned(state, runtime))


async def _reasoned(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[Judged]:
    """A `reasoning` step (seed 002 §8.6 ReasoningTool): the model's cited answer or the extractive one."""
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
            events.append(event("fallback_answer", say("ev_fallback_answer", session.query), step_id=step.step_id))
    if answer is None:
        answer = await extractive_answer(
            session.query,
            material,
            max_sentences=context.grace.executor.answer_sentences,
            checkpoint=context.checkpoint,
        )
    detail = answer_confidence(answer, context.grace, session.thresholds)
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
        event(
            "step_finished",
            say("ev_step_finished", session.query, step_id=step.step_id, status="success"),
            step_id=step.step_id,
            status="success",
            confidence=detail.score,
        )
    )
    return _judged(state, session, result, events)


async def replan_node(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[Onward]:
    """Replace the plan and go on with it, or finish at the replan limit (`_replanned`)."""
    return await _settle(state, runtime, await _replanned(state, runtime))


async def _replanned(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[NextStep]:
    """Replace the plan after a trigger (seed 002 §8.5) and run it; at the replan limit, finish instead."""
    session = state["session"]
    trigger = state["trigger"]
    assert trigger is not None
    limit = state["max_replans"]
    if len(session.replans) >= limit:
        message = say("ev_replan_limit", session.query, limit=limit)
        return Command(update={"finish": "replan_limit", "events": [event("replan_limit", message)]}, goto="finish")
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
    update: GraceGraphState = {
        "session": session,
        "trigger": None,
        "events": [event("replanned", message, strategy=replanned.strategy, step_id=record.step_id)],
    }
    update, goto = _advance(state, update)
    return Command(update=update, goto=goto)


# --- the endings ------------------------------------------------------------------------------------


async def emit_search(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """SEARCH: hand the next `rag_search` step to the caller and wait for its `tool_result`."""
    step = state["cursor"].step
    assert step is not None
    context = runtime.context
    session, reply = actions.search(
        state["session"], step, request_id=context.request_id, top_k=context.grace.executor.top_k
    )
    return _respond(state, runtime, session, reply, [step_started(session, step)])


async def ask_question(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """ASK_USER for an `ask_user` step (kind QUESTION) or for approval of the plan (kind PLAN)."""
    session = state["session"]
    step = state["cursor"].step
    request_id = runtime.context.request_id
    if state["cursor"].kind == "plan" or step is None:
        question = say("ask_plan", session.query, count=len(session.plan.steps))
        session, reply = actions.ask_user(session, request_id=request_id, kind="PLAN", question=question)
        return _respond(state, runtime, session, reply, [])
    question = step.description or step.query
    session, reply = actions.ask_user(session, request_id=request_id, kind="QUESTION", question=question, step=step)
    return _respond(state, runtime, session, reply, [step_started(session, step)])


async def ask_intervention(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """ASK_USER for a result at CONFIRM (approve it) or ESCALATE (add information) (seed 002 §4.4)."""
    session = state["session"]
    result = state["result"]
    assert result is not None
    assert result.detail is not None
    decision = result.detail.decision
    assert decision in ("CONFIRM", "ESCALATE")
    step = _step(session, result.step_id)
    question = say(
        "ask_confirm" if decision == "CONFIRM" else "ask_escalate",
        session.query,
        step_id=step.step_id,
        description=step.description or step.query,
        score=figure(result.confidence, levels(session.thresholds)),
    )
    session, reply = actions.ask_user(
        session, request_id=runtime.context.request_id, kind=decision, question=question, step=step, result=result
    )
    return _respond(state, runtime, session, reply, [])


async def finish(state: GraceGraphState, runtime: Runtime[AgentContext]) -> GraceGraphState:
    """COMPLETE with the session's final answer (`final_answer`), or ERROR LOOP_LIMIT when there is none."""
    context = runtime.context
    session = state["session"]
    final = await final_answer(session, state.get("finish", "completed"), context)
    if final is None:
        session, reply = actions.loop_limit(session, request_id=context.request_id, max_replans=state["max_replans"])
        return _respond(state, runtime, session, reply, [])
    if final.status == "cancelled":
        ended = event("cancelled", say("ev_cancelled", session.query))
    else:
        shown = figure(final.confidence, levels(session.thresholds))
        ended = event("completed", say("ev_completed", session.query, score=shown), confidence=final.confidence)
    session, reply = actions.complete(session, final, request_id=context.request_id)
    return _respond(state, runtime, session, reply, [ended])


def _respond(
    state: GraceGraphState,
    runtime: Runtime[AgentContext],
    session: GraceState,
    reply: actions.Reply,
    events: list[GraceEvent],
) -> GraceGraphState:
    """End the request: the action with all of the step's events numbered, the usage and the next state's token.

    Events are numbered across the session (continuing the previous state's count), so a UI that
    reconnects can tell which it has seen; the session sealed into the token waits for exactly what
    this action asks for. Every node that ends a request ends with this (not a node of its own: one
    graph step fewer per request).
    """
    prior = state.get("prior")
    base = prior.event_count if prior is not None else 0
    numbered = [msgspec.structs.replace(e, index=base + i) for i, e in enumerate([*state["events"], *events])]
    session = msgspec.structs.replace(session, event_count=base + len(numbered))
    context = runtime.context
    # The usage is the request's meter: every model call of this step, fallbacks included.
    outcome = reply.finalize(events=numbered, usage=context.usage, state=context.seal(session))
    return {"events": events, "outcome": outcome}


EndingFn = Callable[[GraceGraphState, Runtime[AgentContext]], Awaitable[GraceGraphState]]

ENDINGS: dict[str, EndingFn] = {
    "emit_search": emit_search,
    "ask_question": ask_question,
    "ask_intervention": ask_intervention,
    "finish": finish,
}
"""How each `Ending` ends the request."""

EntryFn = Callable[[GraceGraphState, Runtime[AgentContext]], Awaitable[Command[Any]]]

ENTRIES: dict[str, EntryFn] = {
    "make_plan": make_plan,
    "take_tool_result": take_tool_result,
    "take_user_response": take_user_response,
}
"""What `take_request` runs for each answer of `routing.route_entry`."""


async def _settle(state: GraceGraphState, runtime: Runtime[AgentContext], move: Command[Any]) -> Command[Onward]:
    """A node's move as the graph takes it: on to another node, or, for an ending, the ending run here and END.

    The move's update is not in the state yet, so what runs next here reads the state as the update will
    leave it (its `events` appended, as the channel's reducer appends them); its own update joins the move's.

    Reasoning by the embedded engine (no model) runs here too, step after step, rather than in the `reason`
    node: it does no I/O, so the progress records a stream relays come no later, and a graph step costs
    LangGraph more than such a step (`python -m bench.step_breakdown`). With a model, a reasoning step
    waits for its answer, so it stays a node of its own: the records before it reach the stream first.
    """
    update = move.update
    assert isinstance(update, dict)
    goto = move.goto
    moved: list[GraceEvent] = update.get("events", [])
    ahead: GraceGraphState = {**state, **update, "events": [*state.get("events", []), *moved]}
    if goto == "reason" and runtime.context.llm is None:
        # A reasoning step finishes a step of the plan (only a replan, which stops this, changes the plan).
        steps_left = len(ahead["session"].plan.steps)
        while goto == "reason":
            if steps_left == 0:
                raise RuntimeError("reasoning went on past the plan's last step: a bug in the executor")
            steps_left -= 1
            step = await _reasoned(ahead, runtime)
            stepped = step.update
            assert isinstance(stepped, dict)
            more: list[GraceEvent] = stepped.get("events", [])
            moved = [*moved, *more]
            update = {**update, **stepped, "events": moved}
            ahead = {**ahead, **stepped, "events": [*ahead["events"], *more]}
            goto = step.goto
    if goto == "reason" or goto == "replan":
        return Command(update=update, goto=goto)
    assert isinstance(goto, str)
    ended = await ENDINGS[goto](ahead, runtime)
    return Command(update={**update, **ended, "events": [*moved, *ended.get("events", [])]}, goto=RUN_END)
