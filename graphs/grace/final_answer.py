"""How a GRACE session ends: which answer it gives, with what confidence and sources, and its status.

The answer is the last successful reasoning step's of the current plan, with that step's citations;
without one (the plan was cut short by a cancel or the replan limit) it is the extractive answer over
everything the plan gathered. The status is `cancelled` when the user cancelled, `partial` when the
replan limit cut the session short or any step of the plan did not succeed, else `completed`. After the
replan limit with nothing gathered at all there is no answer to give (the step answers ERROR LOOP_LIMIT).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contracts.grace import Evidence, GraceState, StepResult
from graphs.config_files import GraceConfig
from graphs.context import AgentContext
from graphs.grace.reasoning import Material, answer_confidence, extractive_answer

FinishReason = Literal["completed", "cancelled", "replan_limit"]
"""Why the executor stopped: the plan ran out of steps, the user cancelled, or replanning hit its limit."""
CompletionStatus = Literal["completed", "partial", "cancelled"]


@dataclass(frozen=True)
class FinalAnswer:
    """What COMPLETE reports: the answer, its confidence, the evidence it cites and the session's status."""

    status: CompletionStatus
    text: str
    confidence: float
    sources: list[Evidence]


def completion_status(session: GraceState, reason: FinishReason) -> CompletionStatus:
    """`cancelled` on CANCEL; `partial` after the replan limit or when a step of the plan has no success."""
    if reason == "cancelled":
        return "cancelled"
    results = {r.step_id: r for r in session.results}
    troubled = any(results.get(s.step_id) is None or results[s.step_id].status != "success" for s in session.plan.steps)
    return "partial" if reason == "replan_limit" or troubled else "completed"


def last_reasoning(session: GraceState) -> StepResult | None:
    """The plan's last successful reasoning result (in plan order), whose answer the session gives."""
    results = {r.step_id: r for r in session.results}
    answered = [results[s.step_id] for s in session.plan.steps if s.step_id in results]
    reasoned = [r for r in answered if r.action == "reasoning" and r.status == "success"]
    return reasoned[-1] if reasoned else None


async def final_answer(session: GraceState, reason: FinishReason, context: AgentContext) -> FinalAnswer | None:
    """The session's final answer; None when the replan limit was reached with nothing gathered at all."""
    status = completion_status(session, reason)
    final = last_reasoning(session)
    if final is not None:
        cited = next((c.evidence for c in session.citations if c.step_id == final.step_id), [])
        return FinalAnswer(status, final.output, final.confidence, [session.evidence[i] for i in cited])
    plan_ids = {s.step_id for s in session.plan.steps}
    material = Material(
        evidence=[e for e in session.evidence if e.step_id in plan_ids],
        user_inputs=list(session.user_inputs),
        context=[],
    )
    if reason == "replan_limit" and not material.evidence and not material.user_inputs:
        return None
    config: GraceConfig = context.grace
    answer = await extractive_answer(
        session.query, material, max_sentences=config.executor.answer_sentences, checkpoint=context.checkpoint
    )
    detail = answer_confidence(answer, config, session.thresholds)
    return FinalAnswer(status, answer.text, detail.score, answer.cited)
