"""What each way of running a compiled LangGraph graph to its output costs, same graphs, same run.

`graphs.invoke.run_to_output` is how every agent runs its graph; this measures why it is written as it is.
Graphs shaped like the agents' (a TypedDict state of nine channels, `AgentContext`-style context, async
nodes in a chain, the last writing `outcome`) of 1, 2 and 4 supersteps are run to their output in turns,
`--runs` times each per round, `--rounds` rounds; the figure is each way's median CPU per run (process
time, so other load on the machine inflates wall time, not this), and its ratio to `ainvoke`.

    python -m bench.graph_invocation [--runs 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from bench.tools import command_line, emit
from graphs.invoke import run_to_output


@dataclass(frozen=True)
class _Context:
    request_id: str = "bench"


class _State(TypedDict, total=False):
    request: Any
    prior: Any
    a: Any
    b: Any
    c: Any
    d: Any
    e: Any
    f: Any
    outcome: Any


def build(steps: int) -> Any:
    """A chain of `steps` async nodes; each writes two channels, the last writes `outcome`."""
    graph = StateGraph(_State, context_schema=_Context)
    names = [f"n{i}" for i in range(steps)]
    for i, name in enumerate(names):

        async def node(state: _State, runtime: Runtime[_Context], i: int = i) -> _State:
            return {"outcome": i} if i == steps - 1 else {"a": i, "b": i}

        graph.add_node(name, node)
    graph.add_edge(START, names[0])
    for before, after in itertools.pairwise(names):
        graph.add_edge(before, after)
    graph.add_edge(names[-1], END)
    return graph.compile()


Way = Callable[[Any, dict[str, Any], Any], Awaitable[Any]]


async def ainvoke(graph: Any, inputs: dict[str, Any], context: Any) -> Any:
    return (await graph.ainvoke(inputs, context=context))["outcome"]


async def values_stream(graph: Any, inputs: dict[str, Any], context: Any) -> Any:
    final: Any = None
    async for values in graph.astream(inputs, context=context, stream_mode="values"):
        final = values
    return final["outcome"]


async def updates_stream(graph: Any, inputs: dict[str, Any], context: Any) -> Any:
    outcome: Any = None
    async for chunk in graph.astream(inputs, context=context, stream_mode="updates"):
        for update in chunk.values():
            if update and "outcome" in update:
                outcome = update["outcome"]
    return outcome


async def values_stream_exit_durability(graph: Any, inputs: dict[str, Any], context: Any) -> Any:
    final: Any = None
    async for values in graph.astream(inputs, context=context, stream_mode="values", durability="exit"):
        final = values
    return final["outcome"]


async def output_channel_stream_no_callbacks(graph: Any, inputs: dict[str, Any], context: Any) -> Any:
    final: Any = None
    config: Any = {"callbacks": None}
    async for value in graph.astream(inputs, config, context=context, stream_mode="values", output_keys="outcome"):
        final = value
    return final


async def run_to_output_helper(graph: Any, inputs: dict[str, Any], context: Any) -> Any:
    return await run_to_output(graph, inputs, context)


WAYS: list[Way] = [
    ainvoke,
    values_stream,
    updates_stream,
    values_stream_exit_durability,
    output_channel_stream_no_callbacks,
    run_to_output_helper,
]


async def measure(runs: int, rounds: int) -> list[dict[str, Any]]:
    context = _Context()
    rows = []
    for steps in (1, 2, 4):
        graph = build(steps)
        inputs = {"request": object(), "prior": None}
        for way in WAYS:  # every way gives the same answer, and warms up
            assert await way(graph, inputs, context) == steps - 1, way.__name__
        cpu: dict[str, list[float]] = {way.__name__: [] for way in WAYS}
        for _ in range(rounds):
            for way in WAYS:
                started = time.process_time()
                for _ in range(runs):
                    await way(graph, inputs, context)
                cpu[way.__name__].append((time.process_time() - started) / runs * 1e6)
        base = statistics.median(cpu["ainvoke"])
        for name, figures in cpu.items():
            median = statistics.median(figures)
            rows.append(
                {
                    "supersteps": steps,
                    "way": name,
                    "cpu_us_median": round(median, 1),
                    "ratio_over_ainvoke": round(median / base, 3),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000, help="runs of each way per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="`durability` has no effect")  # no checkpointer: measured anyway
    rows = asyncio.run(measure(args.runs, args.rounds))
    emit(
        {
            "benchmark": "graph_invocation",
            "command": command_line("bench.graph_invocation", sys.argv[1:]),
            "rows": rows,
            "note": "CPU per run to the output channel; run_to_output_helper is graphs.invoke.run_to_output",
        },
        None,
    )


if __name__ == "__main__":
    main()
