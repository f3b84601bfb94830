"""Graph nodes and routers are `async def`, so a step never hops to LangGraph's thread pool."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal, TypedDict

import msgspec
import pytest
from langgraph.graph import END, START, StateGraph

from contracts.librarian import LibrarianRequest, SearchAction
from contracts.proposal_quality import ProposalRunRequest
from graphs.context import AgentContext
from graphs.librarian import graph as librarian_graph
from graphs.librarian.run import think
from graphs.proposal_quality import graph as proposal_graph
from graphs.proposal_quality.run import run_advisor, run_organizer
from tests.support.context import make_context


class _State(TypedDict, total=False):
    value: int


async def test_langgraph_runs_a_sync_router_on_a_thread() -> None:
    """Why the rule (README layout: graph nodes and routers are `async def`) exists: a sync one hops threads."""
    seen: list[str] = []

    def route(state: _State) -> Literal["end"]:
        seen.append(threading.current_thread().name)
        return "end"

    graph = StateGraph(_State)
    graph.add_node("start", _noop)
    graph.add_node("end", _noop)
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", route)
    graph.add_edge("end", END)
    await graph.compile().ainvoke({"value": 1})
    assert seen
    assert seen[0] != threading.main_thread().name


async def _noop(state: _State) -> _State:
    return {}


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
