"""Where the ACE graphs go next: pure functions of the state, testable without a model.

They are `async def` though they never await: LangGraph's `ainvoke` runs a sync branch function through
`run_in_executor` (a worker-thread hop per routing decision: `coerce_to_runnable` wraps it in
`RunnableCallable(func, partial(run_in_executor, None, func))`, and `Branch._aroute` awaits that), while
an async one runs inline on the event loop.
"""

from __future__ import annotations

from typing import Literal

from graphs.ace.state import AceGraphState


async def route_after_reflect(state: AceGraphState) -> Literal["reflect", "finish_reflection"]:
    """Refine again while iterations remain and the last one changed something (seed 001's iterative refinement).

    The heuristic engine, a model failure and an unusable reply all mark the loop converged.
    """
    if state.get("converged", False) or state["iteration"] >= state["max_iterations"]:
        return "finish_reflection"
    return "reflect"


async def route_after_generate(state: AceGraphState) -> Literal["resolve_bullets", "respond_workflow"]:
    """A workflow run with feedback (ground truth or test report) goes on to reflect and curate."""
    if state.get("ground_truth", "").strip() or state.get("test_report", "").strip():
        return "resolve_bullets"
    return "respond_workflow"


async def route_after_merge(state: AceGraphState) -> Literal["save_playbook", "respond_workflow"]:
    """Save the curated playbook only when the request asked for it."""
    return "save_playbook" if state.get("save", False) else "respond_workflow"
