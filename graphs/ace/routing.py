"""Where the ACE graphs go next: plain functions of the state, testable without a model."""

from __future__ import annotations

from typing import Literal

from graphs.ace.state import AceGraphState


def route_after_reflect(state: AceGraphState) -> Literal["reflect", "finish_reflection"]:
    """Refine again while iterations remain and the last one changed something (seed 001's iterative refinement).

    The heuristic engine, a model failure and an unusable reply all mark the loop converged.
    """
    if state.get("converged", False) or state["iteration"] >= state["max_iterations"]:
        return "finish_reflection"
    return "reflect"


def route_after_generate(state: AceGraphState) -> Literal["resolve_bullets", "respond_workflow"]:
    """A workflow run with feedback (ground truth or test report) goes on to reflect and curate."""
    if state.get("ground_truth", "").strip() or state.get("test_report", "").strip():
        return "resolve_bullets"
    return "respond_workflow"


def route_after_merge(state: AceGraphState) -> Literal["save_playbook", "respond_workflow"]:
    """Save the curated playbook only when the request asked for it."""
    return "save_playbook" if state.get("save", False) else "respond_workflow"
