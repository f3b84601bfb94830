"""Human-in-the-loop (seed 002 §4.4, §8.4): which decisions stop for the user, and how feedback moves the thresholds.

SILENT and NOTIFY proceed on their own (NOTIFY leaves an event); CONFIRM and ESCALATE stop with an
ASK_USER. The user's feedback on a shown result moves all three thresholds by `feedback.step`
together: `correct` lowers them (the agent asked when it need not have), `incorrect` raises them.
Moving them together keeps SILENT > NOTIFY > CONFIRM by construction; the shift stops at the bounds
(`feedback.min_confirm` for CONFIRM, `feedback.max_silent` for SILENT, widened to include the configured
thresholds so a configuration outside the feedback bounds is never pulled in by a single answer).
What PROCEED means depends on what was asked (`proceed`); MODIFY replans and CANCEL finishes (see nodes).
"""

from __future__ import annotations

import msgspec

from contracts.grace import (
    ActionDecision,
    AskKind,
    Feedback,
    GraceState,
    InterventionDecision,
    StepResult,
    Thresholds,
    UserInput,
)
from graphs.config_files import GraceConfig
from graphs.grace.confidence import certain
from graphs.grace.wording import say

OPTIONS: tuple[InterventionDecision, ...] = ("PROCEED", "MODIFY", "CANCEL")
"""What every ASK_USER accepts: go on, change the plan, or stop."""

STOPPING: frozenset[ActionDecision] = frozenset({"CONFIRM", "ESCALATE"})
"""Decisions that need the user before the plan goes on."""

TOLERANCE = 1e-6


def needs_user(decision: ActionDecision) -> bool:
    """Whether a decision stops the plan for an ASK_USER."""
    return decision in STOPPING


def initial_thresholds(config: GraceConfig) -> Thresholds:
    """The thresholds a new session starts with (config/grace_config.yml after `GRACE_` overrides)."""
    t = config.thresholds
    return Thresholds(silent=t.silent, notify=t.notify, confirm=t.confirm)


def bounds(config: GraceConfig) -> tuple[float, float]:
    """The lowest CONFIRM and the highest SILENT threshold feedback may reach."""
    return min(config.feedback.min_confirm, config.thresholds.confirm), max(
        config.feedback.max_silent, config.thresholds.silent
    )


def adjust_thresholds(thresholds: Thresholds, feedback: Feedback, config: GraceConfig) -> Thresholds:
    """Shift all three thresholds one feedback step down (`correct`) or up (`incorrect`), within the bounds."""
    low, high = bounds(config)
    step = config.feedback.step
    if feedback == "correct":
        delta = min(0.0, max(-step, low - thresholds.confirm))
    else:
        delta = max(0.0, min(step, high - thresholds.silent))
    return Thresholds(
        silent=round(thresholds.silent + delta, 6),
        notify=round(thresholds.notify + delta, 6),
        confirm=round(thresholds.confirm + delta, 6),
    )


def thresholds_problem(thresholds: Thresholds, config: GraceConfig) -> str | None:
    """Why thresholds read from a state cannot be trusted, or None when they are ordered and within bounds."""
    low, high = bounds(config)
    t = thresholds
    if not t.confirm < t.notify < t.silent:
        return "thresholds must satisfy confirm < notify < silent"
    if t.confirm < low - TOLERANCE or t.silent > high + TOLERANCE:
        return f"thresholds must stay within [{low}, {high}]"
    return None


def input_required(kind: AskKind) -> bool:
    """ESCALATE asks for information (seed 002 §4.4 "ユーザー入力必須"), and a QUESTION step for its answer."""
    return kind in ("ESCALATE", "QUESTION")


def proceed(session: GraceState, kind: AskKind | None, step_id: int | None, text: str) -> GraceState:
    """The session after PROCEED on a question of `kind` about step `step_id`, with the user's `text` (maybe "").

    PLAN approves the plan. QUESTION records the user's answer as the step's result. ESCALATE on a
    reasoning step with text drops that step's answer, so it is worked out again with what the user
    added (once: `routing.route_after_judge` never asks twice about a step the user answered). Any text
    is kept as user input for later reasoning.
    """
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
    if (
        kind == "ESCALATE"
        and text
        and any(s.step_id == step_id and s.action == "reasoning" for s in session.plan.steps)
    ):
        return msgspec.structs.replace(
            session,
            results=[r for r in session.results if r.step_id != step_id],
            citations=[c for c in session.citations if c.step_id != step_id],
            user_inputs=inputs,
        )
    return msgspec.structs.replace(session, user_inputs=inputs)
