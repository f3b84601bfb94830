"""The proposal-quality nodes: plain functions from the graph state (and run context) to an update.

Seed 004 §4: generate → parse → validate → on errors re-ask with every error and the usable ids,
at most `max_corrections` (≤ 2) times; never for warnings alone; render only a report without
errors. Every attempt's verdict is logged, and so is the final retry count and outcome (§7).

Nodes are `async def` even where they never await: LangGraph runs sync nodes of an async graph in a
thread pool, and a thread hop per node cost more than these sub-millisecond steps do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypeVar

import msgspec
import structlog
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from contracts.proposal_quality import (
    AdvisorReport,
    OrganizerReport,
    ProposalAttempt,
    ProposalRunResponse,
    ValidationResult,
)
from graphs.context import AgentContext
from graphs.proposal_quality.board_agreement import board_disagreements, focus_problems
from graphs.proposal_quality.drafting.advisor import advisor_report
from graphs.proposal_quality.drafting.llm import copied_text_problems, draft_report, generation_prompt, prompt_ids
from graphs.proposal_quality.drafting.organizer import organizer_report
from graphs.proposal_quality.grounding import ground_report
from graphs.proposal_quality.render import render_advisor, render_organizer
from graphs.proposal_quality.routing import route_after_check
from graphs.proposal_quality.self_correction import build_correction_prompt
from graphs.proposal_quality.state import Attempt, ProposalGraphState, ProposalRun
from graphs.proposal_quality.validator import validate_report, without_null_optionals

log = structlog.get_logger(__name__)


OFF_LOOP_BOARD_NODES = 1_000
"""Boards with more nodes than this are drafted by the rules, and every attempt checked, on a worker thread."""

T = TypeVar("T")


async def off_loop_when_large(nodes: int, work: Callable[[], T]) -> T:
    """`work()` in place for a usual board; on a worker thread for one of more than `OFF_LOOP_BOARD_NODES` nodes.

    A board near the node limit, with long titles, takes drafting or checking a good part of a second, which
    the event loop would spend not answering others; a usual one takes less than the thread hop would cost.
    """
    return await asyncio.to_thread(work) if nodes > OFF_LOOP_BOARD_NODES else work()


async def generate(
    state: ProposalGraphState, runtime: Runtime[AgentContext]
) -> Command[Literal["generate", "__end__"]]:
    """One attempt: draft the report (`draft`), validate it and log the verdict (`check`), then end or re-ask.

    Where it goes is `routing.route_after_check`'s answer: a re-ask is this node again; a report without
    errors is rendered (`render`) and a report out of attempts rejected (`reject`) right here, ending the
    run. Checking, rendering and rejecting need no I/O and each costs less than a graph step, so they are
    functions this node calls in order rather than nodes of their own: a run is one graph step per attempt.
    """
    run, previous = state["run"], state.get("attempt")
    number = 1 if previous is None else previous.number + 1
    messages, reply_text, report, parse_errors = await draft(run, previous, runtime.context)
    judge = partial(check, run, report, parse_errors, number, runtime.context)
    verdict = await off_loop_when_large(len(run.board.nodes), judge)
    summary = ProposalAttempt(attempt=number, ok=verdict.ok, errors=verdict.errors, warnings=verdict.warnings)
    log_so_far = [] if previous is None else previous.log
    attempt = Attempt(
        number=number,
        messages=messages,
        reply_text=reply_text,
        report=report,
        parse_errors=parse_errors,
        verdict=verdict,
        log=[*log_so_far, summary],
    )
    match await route_after_check({"run": run, "attempt": attempt}):
        case "generate":
            return Command(update={"attempt": attempt}, goto="generate")
        case "render":
            outcome = render(run, attempt, runtime.context)
        case "reject":
            outcome = reject(run, attempt, runtime.context)
    return Command(update={"attempt": attempt, "outcome": outcome}, goto="__end__")  # END


Draft = tuple[list[BaseMessage], str, object | None, list[str]]
"""A generation: the conversation so far, the reply's text, the parsed report (None when unparseable), parse errors."""


async def draft(run: ProposalRun, previous: Attempt | None, context: AgentContext) -> Draft:
    """The embedded engine's report, or the model's first answer or corrected answer."""
    request, board, kind = run.request, run.board, run.kind
    if context.llm is None:
        build = organizer_report if kind == "organizer" else advisor_report
        options: dict[str, Any] = {} if kind == "organizer" else {"notes": request.constraints.notes}
        rules = partial(build, board, focus_id=request.focus_node_id, intent=request.user_intent, **options)
        report = await off_loop_when_large(len(board.nodes), rules)
        return [], "", report, []
    if previous is None:
        prompt = generation_prompt(
            context,
            kind,
            board,
            focus_id=request.focus_node_id,
            intent=request.user_intent,
            notes=request.constraints.notes,
        )
        messages: list[BaseMessage] = [HumanMessage(prompt)]
    else:
        correction = build_correction_prompt(
            previous.verdict.errors, prompt_ids(board, request.focus_node_id), context.prompts_dir
        )
        messages = [*previous.messages, AIMessage(previous.reply_text), HumanMessage(correction)]
    answer = await draft_report(context, kind, messages)
    return messages, answer.text, answer.report, answer.parse_errors


def check(
    run: ProposalRun, report: object | None, parse_errors: list[str], number: int, context: AgentContext
) -> ValidationResult:
    """Validate the attempt (an unparseable reply fails with its parse errors) and log the verdict.

    A model's report whose strings copy the prompt's placeholders or instructions fails too, as a
    Must error the correction prompt names, and so does an Advisor report off the run's focus node; a title
    or status the report gives a node that the dashboard does not is a warning (`board_agreement`).
    """
    if parse_errors:
        verdict = ValidationResult(ok=False, errors=list(parse_errors), warnings=[])
    else:
        errors = focus_problems(run.kind, report, run.request.focus_node_id, run.board)
        if context.llm is not None:
            errors += copied_text_problems(context, run.kind, report)
        warnings = board_disagreements(run.kind, report, run.board)
        verdict = validate_report(run.kind, report, run.board.valid_ids, errors=errors, warnings=warnings)
    log.info(
        "proposal_quality attempt",
        kind=run.kind,
        attempt=number,
        ok=verdict.ok,
        errors=verdict.errors,
        warnings=verdict.warnings,
    )
    return verdict


def render(run: ProposalRun, attempt: Attempt, context: AgentContext) -> ProposalRunResponse:
    """The response for an accepted report: the report, typed, with its display payload (logged)."""
    kind, board = run.kind, run.board
    assert isinstance(attempt.report, dict), "only a report the validator accepted is rendered"
    report = without_null_optionals(kind, attempt.report)
    if kind == "organizer":
        organizer = msgspec.convert(report, OrganizerReport)
        typed: OrganizerReport | AdvisorReport = organizer
        rendered = render_organizer(organizer, board)
    else:
        advisor = msgspec.convert(report, AdvisorReport)
        typed = advisor
        rendered = render_advisor(advisor, board)
    _log_final(run, attempt, context, ok=True)
    return ProposalRunResponse(
        request_id=run.request_id,
        ok=True,
        report=msgspec.to_builtins(typed),
        errors=[],
        warnings=attempt.verdict.warnings,
        attempts=attempt.number,
        attempt_log=attempt.log,
        usage=context.usage,
        rendered=rendered,
    )


def reject(run: ProposalRun, attempt: Attempt, context: AgentContext) -> ProposalRunResponse:
    """Not adopted (seed 004 §4.1 step 4): the last errors, and the last report without unknown ids (logged)."""
    report, _ = ground_report(run.kind, attempt.report, run.board.valid_ids)
    _log_final(run, attempt, context, ok=False)
    verdict = attempt.verdict
    return ProposalRunResponse(
        request_id=run.request_id,
        ok=False,
        report=report,
        errors=verdict.errors,
        warnings=verdict.warnings,
        attempts=attempt.number,
        attempt_log=attempt.log,
        usage=context.usage,
    )


def _log_final(run: ProposalRun, attempt: Attempt, context: AgentContext, *, ok: bool) -> None:
    log.info(
        "proposal_quality result",
        kind=run.kind,
        ok=ok,
        attempts=attempt.number,
        retry_count=attempt.number - 1,
        engine=context.usage.engine,
    )
