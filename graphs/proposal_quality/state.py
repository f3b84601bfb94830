"""The proposal-quality graph's working state for one run (never persisted: the agent is stateless).

`attempt_log` grows by one entry per generation through its reducer; every other key is written
by one node at a time and read by the next. Nothing relies on TypedDict defaults.
"""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langchain_core.messages import BaseMessage

from contracts.proposal_quality import (
    ProposalAttempt,
    ProposalRunRequest,
    ProposalRunResponse,
    ReportKind,
    ValidationResult,
)
from graphs.proposal_quality.board import Board


class ProposalGraphState(TypedDict, total=False):
    """The input and what each node adds.

    The input (`run.run_report`): `kind`, `request`, `request_id`, the flattened `board`, `max_attempts`,
    `attempts` 0 and no `messages` yet.
    """

    kind: ReportKind
    request: ProposalRunRequest
    request_id: str
    board: Board
    max_attempts: int
    messages: list[BaseMessage]
    attempts: int
    reply_text: str
    report: object | None
    parse_errors: list[str]
    verdict: ValidationResult
    attempt_log: Annotated[list[ProposalAttempt], operator.add]
    outcome: ProposalRunResponse
