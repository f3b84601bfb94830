"""Feedback-adjusted thresholds (seed 002 §8.4): bounded, and SILENT > NOTIFY > CONFIRM whatever the feedback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.grace import ActionDecision, Feedback, Thresholds
from graphs.config_files import load_grace_config
from graphs.grace.intervention import adjust_thresholds, bounds, initial_thresholds, needs_user, thresholds_problem

CONFIG = load_grace_config(Path(__file__).resolve().parents[3] / "config", {})


@settings(max_examples=100)
@given(st.lists(st.sampled_from(["correct", "incorrect"]), max_size=60))
def test_any_feedback_sequence_keeps_the_order_and_the_bounds(feedback: list[Feedback]) -> None:
    low, high = bounds(CONFIG)
    thresholds = initial_thresholds(CONFIG)
    for verdict in feedback:
        before = thresholds
        thresholds = adjust_thresholds(thresholds, verdict, CONFIG)
        assert thresholds.confirm < thresholds.notify < thresholds.silent
        assert low - 1e-9 <= thresholds.confirm
        assert thresholds.silent <= high + 1e-9
        assert thresholds_problem(thresholds, CONFIG) is None
        moved = thresholds.silent - before.silent
        assert (moved <= 0) if verdict == "correct" else (moved >= 0)
        assert abs(moved) <= CONFIG.feedback.step + 1e-9


@pytest.mark.parametrize(
    ("feedback", "times", "expected"),
    [
        ("correct", 1, (0.88, 0.68, 0.38)),
        ("incorrect", 1, (0.92, 0.72, 0.42)),
        ("correct", 50, (0.7, 0.5, 0.2)),  # stops at feedback.min_confirm
        ("incorrect", 50, (0.98, 0.78, 0.48)),  # stops at feedback.max_silent
    ],
)
def test_feedback_moves_all_three_by_one_step_until_a_bound(
    feedback: Feedback, times: int, expected: tuple[float, float, float]
) -> None:
    thresholds = initial_thresholds(CONFIG)
    for _ in range(times):
        thresholds = adjust_thresholds(thresholds, feedback, CONFIG)
    assert (thresholds.silent, thresholds.notify, thresholds.confirm) == pytest.approx(expected)


def test_configured_thresholds_outside_the_feedback_bounds_are_not_pulled_in() -> None:
    config = load_grace_config(Path(__file__).resolve().parents[3] / "config", {"GRACE_THRESHOLDS__SILENT": "0.99"})
    thresholds = adjust_thresholds(initial_thresholds(config), "incorrect", config)
    assert thresholds.silent == pytest.approx(0.99)  # already above max_silent: no further, but not lowered either


@pytest.mark.parametrize(
    ("thresholds", "problem"),
    [
        (Thresholds(silent=0.9, notify=0.7, confirm=0.4), None),
        (Thresholds(silent=0.7, notify=0.9, confirm=0.4), "confirm < notify < silent"),
        (Thresholds(silent=0.99, notify=0.8, confirm=0.5), "within"),
        (Thresholds(silent=0.6, notify=0.3, confirm=0.1), "within"),
    ],
)
def test_thresholds_from_a_state_are_checked(thresholds: Thresholds, problem: str | None) -> None:
    found = thresholds_problem(thresholds, CONFIG)
    assert (found is None) if problem is None else (problem in (found or ""))


@pytest.mark.parametrize(
    ("decision", "stops"), [("SILENT", False), ("NOTIFY", False), ("CONFIRM", True), ("ESCALATE", True)]
)
def test_only_confirm_and_escalate_stop_for_the_user(decision: ActionDecision, stops: bool) -> None:
    assert needs_user(decision) is stops
