"""Where a run goes after the validator's verdict: plain functions, testable without a model."""

from __future__ import annotations

from typing import Literal

from graphs.proposal_quality.state import ProposalGraphState


async def route_after_check(state: ProposalGraphState) -> Literal["render", "generate", "reject"]:
    """Render a report without errors; re-ask while attempts remain; otherwise reject with the last errors.

    Warnings alone never cause a re-ask: they are information, not a gate (seed 004 §1, §2.3).
    """
    attempt = state["attempt"]
    if attempt.verdict.ok:
        return "render"
    if attempt.number < state["run"].max_attempts:
        return "generate"
    return "reject"
