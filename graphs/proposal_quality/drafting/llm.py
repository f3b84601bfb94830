"""One generation of a report by the chat model: the prompt, the call and the parse (not the validation).

The prompt asks for JSON only (seed 004 §4.1 step 1) and shows a bounded slice of the dashboard:
at most `MAX_PROMPT_NODES` nodes (the focus node always among them), each title cut short, and
untrusted text inside delimiters with angle brackets neutralised. The reply is parsed as raw JSON
(`parse_reply` with `dict[str, Any]`: fences and chatter stripped, malformed JSON repaired as a last
resort), because the validator, not a schema decoder, judges its shape and words in the seed's terms.
Provider-native JSON mode is bound with the report's own schema where the provider supports it. The
call itself is the shared one (`call_model`: retries, deadline, usage meter); the self-correction
loop is the graph's, as seed 004 §4 lays it out. A report whose strings copy the prompt's
placeholders or instructions fails the check like a Must rule (`copied_text_problems`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog
from langchain_core.messages import BaseMessage

from contracts.common import Usage
from contracts.proposal_quality import AdvisorReport, OrganizerReport, ReportKind
from graphs.context import AgentContext
from graphs.llm.echo import echo_problems
from graphs.llm.structured_output import call_model, native_json_kwargs, parse_reply
from graphs.prompt_files import load_prompt, render_prompt
from graphs.proposal_quality.board import Board
from graphs.proposal_quality.self_correction import NO_IDS, format_ids

log = structlog.get_logger(__name__)

MAX_PROMPT_NODES = 300
"""Nodes shown to the model at most (bounds the prompt whatever the dashboard's size)."""
TITLE_CHARS = 200
"""Characters of a node title shown to the model."""
NOT_GIVEN = "(指定なし)"
TOO_DEEP_ERROR = "$: the reply's JSON is nested too deeply"

REPORT_TYPES: dict[ReportKind, type[Any]] = {"organizer": OrganizerReport, "advisor": AdvisorReport}


@dataclass(frozen=True, slots=True)
class Draft:
    """One reply: the parsed JSON (None when unusable), its text, why it could not be parsed, and its cost."""

    report: object | None
    text: str
    parse_errors: list[str]
    usage: Usage


def _data(text: str, limit: int) -> str:
    """User text as one line of prompt data, bounded, unable to close the prompt's delimiters."""
    flat = " ".join(text.split())[:limit]
    return flat.replace("<", "＜").replace(">", "＞")


def prompt_ids(board: Board, focus_id: str | None) -> list[str]:
    """The ids shown to the model, in dashboard order, the focus node always included."""
    ids = board.ids[:MAX_PROMPT_NODES]
    if focus_id is not None and focus_id in board.valid_ids and focus_id not in ids:
        ids = [*ids[:-1], focus_id] if len(ids) >= MAX_PROMPT_NODES else [*ids, focus_id]
    return ids


def generation_prompt(
    context: AgentContext,
    kind: ReportKind,
    board: Board,
    *,
    focus_id: str | None,
    intent: str | None,
    notes: list[str],
) -> str:
    """The first human turn: the dashboard slice, the request and the report's shape and rules."""
    ids = prompt_ids(board, focus_id)
    lines = []
    for node_id in ids:
        node = board.by_id[node_id]
        lines.append(
            f"- id: {_data(node.id, 256)} | status: {_data(node.status_label, 100) or '(未設定)'}"
            f" | title: {_data(node.title, TITLE_CHARS)}"
            # A parent off the board is an id no report may cite: the model is not shown it.
            + (f" | parent: {_data(node.parent_id, 256)}" if node.parent_id in board.by_id else "")
        )
    hidden = len(board.nodes) - len(ids)
    if hidden > 0:
        lines.append(f"（ほか {hidden} 件のノードは省略）")
    focus = board.get(focus_id)
    return render_prompt(
        f"proposal_quality/{kind}",
        context.prompts_dir,
        nodes="\n".join(lines) or NO_IDS,
        focus=f"id: {_data(focus.id, 256)} | title: {_data(focus.title, TITLE_CHARS)}" if focus else NOT_GIVEN,
        user_intent=_data(intent, 2_000) if intent and intent.strip() else NOT_GIVEN,
        notes="\n".join(f"- {_data(n, 500)}" for n in notes if n.strip()) or NO_IDS,
        valid_ids=format_ids(ids),
    )


async def draft_report(context: AgentContext, kind: ReportKind, messages: list[BaseMessage]) -> Draft:
    """Send the conversation so far and parse the reply into raw JSON (one attempt; the graph re-asks).

    Raises:
        ModelFailure: The provider failed after the transport retries.
        ModelTimeout: The call outlived its timeout or the request's deadline.
    """
    assert context.llm is not None, "the heuristic engine never asks a model"
    cfg = context.llm_config
    native_json = native_json_kwargs(context.llm, REPORT_TYPES[kind], cfg)
    text, usage = await call_model(
        context.llm, messages, cfg=cfg, deadline=context.deadline, meter=context.meter, call_kwargs=native_json
    )
    try:
        parsed = parse_reply(text, dict[str, Any])
    except RecursionError:  # msgspec refuses JSON nested deeper than it can decode
        return Draft(report=None, text=text, parse_errors=[TOO_DEEP_ERROR], usage=usage)
    if parsed.warnings:
        log.info("proposal_quality: reply needed repair", kind=kind, warnings=parsed.warnings)
    return Draft(report=parsed.value, text=text, parse_errors=parsed.errors, usage=usage)


def copied_text_problems(context: AgentContext, kind: ReportKind, report: object) -> list[str]:
    """Strings of the report that copy the generation prompt's placeholders or instructions (a Must error)."""
    return echo_problems(report, load_prompt(f"proposal_quality/{kind}", context.prompts_dir))
