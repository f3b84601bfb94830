"""ACE routing: pure functions of the state, no model, plus the shape of the compiled graphs."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest
from langchain_core.runnables.config import run_in_executor

from contracts.ace import AceCurateRequest, AceGenerateRequest, AceReflectRequest
from graphs.ace.graph import GRAPH_BUILDERS
from graphs.ace.routing import route_after_generate, route_after_merge, route_after_reflect
from graphs.ace.state import AceGraphState
from tests.graphs.ace.helpers import JAPANESE_PLAYBOOK
from tests.support.context import make_context


@pytest.mark.parametrize(
    ("iteration", "max_iterations", "converged", "expected"),
    [
        (1, 1, False, "finish_reflection"),
        (1, 3, False, "reflect"),
        (2, 3, False, "reflect"),
        (3, 3, False, "finish_reflection"),
        (1, 3, True, "finish_reflection"),
        (0, 3, True, "finish_reflection"),  # the model failed on the first call
    ],
)
async def test_reflection_repeats_while_iterations_remain_and_it_changes(
    iteration: int, max_iterations: int, converged: bool, expected: str
) -> None:
    state: AceGraphState = {"iteration": iteration, "max_iterations": max_iterations, "converged": converged}
    assert await route_after_reflect(state) == expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "respond_workflow"),
        ({"ground_truth": "", "test_report": "  "}, "respond_workflow"),
        ({"ground_truth": "333"}, "resolve_bullets"),
        ({"test_report": "FAILED"}, "resolve_bullets"),
    ],
)
async def test_the_workflow_learns_only_from_feedback(fields: AceGraphState, expected: str) -> None:
    assert await route_after_generate(fields) == expected


@pytest.mark.parametrize(("save", "expected"), [(True, "save_playbook"), (False, "respond_workflow")])
async def test_the_workflow_saves_only_when_asked(save: bool, expected: str) -> None:
    assert await route_after_merge({"save": save}) == expected


@pytest.mark.parametrize(
    ("name", "nodes"),
    [
        ("ace_generator", {"prepare_generate", "search", "generate", "respond_answer"}),
        ("ace_reflector", {"prepare_reflect", "resolve_bullets", "reflect", "finish_reflection", "respond_reflection"}),
        ("ace_curator", {"prepare_curate", "update_counters", "propose_deltas", "merge_deltas", "respond_curated"}),
        (
            "ace_workflow",
            {
                "load_playbook",
                "search",
                "generate",
                "resolve_bullets",
                "reflect",
                "finish_reflection",
                "update_counters",
                "propose_deltas",
                "merge_deltas",
                "save_playbook",
                "respond_workflow",
            },
        ),
    ],
)
def test_each_graph_compiles_with_its_nodes(name: str, nodes: set[str]) -> None:
    graph = GRAPH_BUILDERS[name]()
    assert set(graph.get_graph().nodes) - {"__start__", "__end__"} == nodes


def test_the_workflow_wires_every_edge_the_docstring_draws() -> None:
    """load → search → generate → [resolve → reflect⟲ → finish → counters → propose → merge → (save)] → respond."""
    edges = {(e.source, e.target, e.conditional) for e in GRAPH_BUILDERS["ace_workflow"]().get_graph().edges}
    assert edges == {
        ("__start__", "load_playbook", False),
        ("load_playbook", "search", False),
        ("search", "generate", False),
        ("generate", "resolve_bullets", True),
        ("generate", "respond_workflow", True),
        ("resolve_bullets", "reflect", False),
        ("reflect", "reflect", True),
        ("reflect", "finish_reflection", True),
        ("finish_reflection", "update_counters", False),
        ("update_counters", "propose_deltas", False),
        ("propose_deltas", "merge_deltas", False),
        ("merge_deltas", "save_playbook", True),
        ("merge_deltas", "respond_workflow", True),
        ("save_playbook", "respond_workflow", False),
        ("respond_workflow", "__end__", False),
    }


async def test_no_node_or_router_hops_to_a_worker_thread() -> None:
    """Under `ainvoke` LangGraph runs a sync node or branch function through its `run_in_executor`."""
    hops: list[str] = []

    def spy(executor: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return run_in_executor(executor, func, *args, **kwargs)

    with patch("langgraph._internal._runnable.run_in_executor", spy):
        graphs = {name: build() for name, build in GRAPH_BUILDERS.items()}  # the wrapper is bound at build time
    context = make_context()

    async def step(name: str, request: Any) -> Any:
        state = {"request": request, "request_id": "r"}
        return (await graphs[name].ainvoke(state, context=context.for_request(timeout_s=30)))["outcome"]

    answer = await step("ace_generator", AceGenerateRequest(query="東京タワーの高さは？", playbook=JAPANESE_PLAYBOOK))
    reflect = AceReflectRequest(trajectory=answer.trajectory, playbook=JAPANESE_PLAYBOOK, ground_truth="333メートル")
    reflection = (await step("ace_reflector", reflect)).reflection
    await step("ace_curator", AceCurateRequest(reflection=reflection, playbook=JAPANESE_PLAYBOOK))
    assert hops == []
