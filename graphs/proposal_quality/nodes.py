"""The proposal-quality nodes: plain functions from the graph state (and run context) to an update.

Seed 004 §4: generate → parse → validate → on errors re-ask with every error and the usable ids,
at most `max_corrections` (≤ 2) times; never for warnings alone; render only a report without
errors. Every attempt's verdict is logged, and so is the final retry count and outcome (§7).

Nodes are `async def` even where they never await: LangGraph runs sync nodes of an async graph in a
thread pool, and a thread hop per node cost more than these sub-millisecond steps do.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import msgspec
import structlog
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from contracts.proposal_quality import (
    AdvisorReport,
    OrganizerReport,
    ProposalAttempt,
    ProposalRunResponse,
    ValidationResult,
)
from graphs.context import AgentContext
from graphs.proposal_quality.drafting.advisor import advisor_report
from graphs.proposal_quality.drafting.llm import copied_text_problems, draft_report, generation_prompt, prompt_ids
from graphs.proposal_quality.drafting.organizer import organizer_report
from graphs.proposal_quality.grounding import ground_report
from graphs.proposal_quality.render import render_advisor, render_organizer
from graphs.proposal_quality.self_correction import build_correction_prompt
from graphs.proposal_quality.state import ProposalGraphState
from graphs.proposal_quality.validator import validate_report, without_null_optionals

log = structlog.get_logger(__name__)


OFF_LOOP_BOARD_NODES = 1_000
"""Boards with more nodes than this are drafted by the rules on a worker thread."""


async def generate(state: ProposalGraphState, runtime: Runtime[AgentContext]) -> ProposalGraphState:
    """One generation: the embedded engine's report, or the model's first answer or corrected answer."""
    request, board, kind = state["request"], state["board"], state["kind"]
    attempt = state["attempts"] + 1
    context = runtime.context
    if context.llm is None:
        build = organizer_report if kind == "organizer" else advisor_report
        options: dict[str, Any] = {} if kind == "organizer" else {"notes": request.constraints.notes}
        rules = partial(build, board, focus_id=request.focus_node_id, intent=request.user_intent, **options)
        # A board near the node limit takes the rules a third of a second: off the event loop, which keeps
        # answering others; a usual board is drafted in place (a thread hop would cost more than the work).
        report = await asyncio.to_thread(rules) if len(board.nodes) > OFF_LOOP_BOARD_NODES else rules()
        return {"report": report, "parse_errors": [], "reply_text": "", "attempts": attempt}
    if attempt == 1:
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
            state["verdict"].errors, prompt_ids(board, request.focus_node_id), context.prompts_dir
        )
        messages = [*state["messages"], AIMessage(state["reply_text"]), HumanMessage(correction)]
    draft = await draft_report(context, kind, messages)
    return {
        "messages": messages,
        "report": draft.report,
        "parse_errors": draft.parse_errors,
        "reply_text": draft.text,
        "attempts": attempt,
    }


async def check(state: ProposalGraphState, runtime: Runtime[AgentContext]) -> ProposalGraphState:
    """Validate the attempt (an unparseable reply fails with its parse errors) and log the verdict.

    A model's report whose strings copy the prompt's placeholders or instructions fails too, as a
    Must error the correction prompt names.
    """
    if state["parse_errors"]:
        verdict = ValidationResult(ok=False, errors=list(state["parse_errors"]), warnings=[])
    else:
        verdict = validate_report(state["kind"], state["report"], state["board"].valid_ids)
        if runtime.context.llm is not None:
            copied = copied_text_problems(runtime.context, state["kind"], state["report"])
            if copied:
                verdict = ValidationResult(ok=False, errors=[*verdict.errors, *copied], warnings=verdict.warnings)
    log.info(
        "proposal_quality attempt",
        kind=state["kind"],
        attempt=state["attempts"],
        ok=verdict.ok,
        errors=verdict.errors,
        warnings=verdict.warnings,
    )
    summary = ProposalAttempt(
        attempt=state["attempts"], ok=verdict.ok, errors=verdict.errors, warnings=verdict.warnings
    )
    return {"verdict": verdict, "attempt_log": [summary]}


async def render(state: ProposalGraphState, runtime: Runtime[AgentContext]) -> ProposalGraphState:
    """The accepted report, typed, with its display payload."""
    kind, board, verdict = state["kind"], state["board"], state["verdict"]
    assert isinstance(state["report"], dict), "only a report the validator accepted is rendered"
    report = without_null_optionals(kind, state["report"])
    if kind == "organizer":
        organizer = msgspec.convert(report, OrganizerReport)
        typed: OrganizerReport | AdvisorReport = organizer
        rendered = render_organizer(organizer, board)
    else:
        advisor = msgspec.convert(report, AdvisorReport)
        typed = advisor
        rendered = render_advisor(advisor, board)
    _log_final(state, runtime.context, ok=True)
    return {
        "outcome": ProposalRunResponse(
            request_id=state["request_id"],
            ok=True,
            report=msgspec.to_builtins(typed),
            errors=[],
            warnings=verdict.warnings,
            attempts=state["attempts"],
            attempt_log=state["attempt_log"],
            usage=runtime.context.usage,
            rendered=rendered,
        )
    }


async def reject(state: ProposalGraphState, runtime: Runtime[AgentContext]) -> ProposalGraphState:
    """Not adopted (seed 004 §4.1 step 4): the last errors, and the last report without unknown ids (logged)."""
    report, _ = ground_report(state["kind"], state["report"], state["board"].valid_ids)
    _log_final(state, runtime.context, ok=False)
    verdict = state["verdict"]
    return {
        "outcome": ProposalRunResponse(
            request_id=state["request_id"],
            ok=False,
            report=report,
            errors=verdict.errors,
            warnings=verdict.warnings,
            attempts=state["attempts"],
            attempt_log=state["attempt_log"],
            usage=runtime.context.usage,
        )
    }


def _log_final(state: ProposalGraphState, context: AgentContext, *, ok: bool) -> None:
    log.info(
        "proposal_quality result",
        kind=state["kind"],
        ok=ok,
        attempts=state["attempts"],
        retry_count=state["attempts"] - 1,
        engine=context.usage.engine,
    )
