"""The proposal-quality graph's working state for one run (never persisted: the agent is stateless).

Three channels, each written whole: `run` (the input, set once by `run.run_report`), `attempt` (the
latest generation and its verdict, replaced by each generation) and `outcome` (the response, set when
the run ends). Fewer keys are fewer channels for LangGraph to read, write and version on every step,
and a run is one graph step per attempt. Nothing relies on TypedDict defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from langchain_core.messages import BaseMessage

from contracts.proposal_quality import (
    ProposalAttempt,
    ProposalRunRequest,
    ProposalRunResponse,
    ReportKind,
    ValidationResult,
)
from graphs.proposal_quality.board import Board


@dataclass(frozen=True, slots=True)
class ProposalRun:
    """What one run works from: the report kind, the request, the flattened board, the generations allowed."""

    kind: ReportKind
    request: ProposalRunRequest
    request_id: str
    board: Board
    max_attempts: int


@dataclass(frozen=True, slots=True)
class Attempt:
    """One generation and its verdict, with the conversation so far (the model path re-asks within it)."""

    number: int
    """1 for the first generation, 2 and 3 for the re-asks."""
    messages: list[BaseMessage]
    reply_text: str
    report: object | None
    parse_errors: list[str]
    verdict: ValidationResult
    log: list[ProposalAttempt]
    """Every attempt's verdict so far, this one last (the response's `attempt_log`)."""


class ProposalGraphState(TypedDict, total=False):
    """The input (`run`) and what the nodes add (`attempt`, then `outcome`)."""

    run: ProposalRun
    attempt: Attempt
    outcome: ProposalRunResponse
