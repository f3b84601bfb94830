"""The step breakdown's arithmetic: the framework's share is what the graph run costs beyond its nodes."""

from __future__ import annotations

import asyncio

from bench.step_breakdown import _parts, cpu_us


def test_parts_split_the_request_into_outside_graph_and_langgraph() -> None:
    parts = _parts(app_request_us=3000.0, graph_run_us=2500.0, nodes_us={"a": 400.0, "b": 600.0}, seal_us=100.0)
    assert parts["langgraph_us"] == 1500.0
    assert parts["outside_graph_us"] == 500.0
    assert parts["seal_us"] == 100.0


def test_cpu_us_counts_every_call_and_reports_a_positive_time() -> None:
    calls = 0

    async def work() -> object:
        nonlocal calls
        calls += 1
        return sum(range(1000))

    figure = asyncio.run(cpu_us(work, runs=50, rounds=3))
    assert figure > 0
    assert calls == 50 // 5 + 1 + 50 * 3
