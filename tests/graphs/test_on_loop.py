"""Graph functions registered through `on_loop` run on the event loop, and the graphs take no thread hop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal, TypedDict

import msgspec
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from contracts.librarian import LibrarianRequest, SearchAction
from contracts.proposal_quality import ProposalRunRequest
from graphs.context import AgentContext
from graphs.librarian import graph as librarian_graph
from graphs.librarian.run import think
from graphs.on_loop import on_loop
from graphs.proposal_quality import graph as proposal_graph
from graphs.proposal_quality.run import run_advisor, run_organizer
from tests.support.context import make_context


class _State(TypedDict, total=False):
    value: int
    runtime_seen: bool
    threads: list[str]


def _route(state: _State) -> Literal["left", "right"]:
    return "left" if state["value"] > 0 else "right"


def _node(state: _State, runtime: Runtime[AgentContext]) -> _State:
    return {"runtime_seen": isinstance(runtime.context, AgentContext), "threads": [threading.current_thread().name]}


def _router_graph() -> Any:
    graph = StateGraph(_State, context_schema=AgentContext)
    graph.add_node("start", on_loop(_node))
    graph.add_node("left", lambda state: {"value": 1})
    graph.add_node("right", lambda state: {"value": -1})
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", on_loop(_route))
    graph.add_edge("left", END)
    graph.add_edge("right", END)
    return graph.compile()


async def test_wrapped_functions_keep_their_signature_and_return_type() -> None:
    compiled = _router_graph()
    edges = {(edge.source, edge.target) for edge in compiled.get_graph().edges}
    assert {("start", "left"), ("start", "right")} <= edges  # the router's Literal return type still names its ends
    result = await compiled.ainvoke({"value": 5}, context=make_context())
    assert result["runtime_seen"] is True  # `runtime` still injected by parameter name
    assert result["threads"] == [threading.main_thread().name]


@pytest.fixture
async def no_thread_hops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any `run_in_executor` on the running loop fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a thread hop: run_in_executor{args[:2]}")

    monkeypatch.setattr(asyncio.get_running_loop(), "run_in_executor", refuse)


def _context() -> AgentContext:
    return make_context().for_request(timeout_s=30, request_id="r", seal_state=lambda state: "token")


@pytest.mark.usefixtures("no_thread_hops")
async def test_a_librarian_step_stays_on_the_event_loop() -> None:
    request = msgspec.convert(
        {"request_id": "r", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "s"}, LibrarianRequest
    )
    answer = await think(librarian_graph.build_graph(), _context(), request, None)
    assert isinstance(answer, SearchAction), answer


@pytest.mark.usefixtures("no_thread_hops")
@pytest.mark.parametrize("run", [run_organizer, run_advisor], ids=["organizer", "advisor"])
async def test_a_proposal_run_stays_on_the_event_loop(run: Any) -> None:
    trays = {"todo": [{"id": "n1", "title": "ログインの設計"}, {"id": "n2", "title": "ログインの実装"}]}
    request = msgspec.convert({"dashboard": {"trays": trays}, "focusNodeId": "n1"}, ProposalRunRequest)
    answer = await run(proposal_graph.build_graph(), _context(), request, None)
    assert answer.ok, answer
