"""Where the CPU of a GRACE step and of a proposal run goes, in-process: app, graph, our nodes, LangGraph.

The throughput benchmarks (`bench.grace_throughput`, `bench.proposal_quality_throughput`) say how fast
a request is over HTTP; this says what it is made of, so a speed change can be aimed. Same payloads as
those benchmarks, driven in-process (no sockets, no uvicorn), median of `--rounds` rounds of `--runs`
requests, process CPU time per request, with the collector set up as a serving worker sets it up
(`prepare_collector_for_serving`: under the interpreter's default thresholds the young collections that
the graph run's allocations trigger were counted as LangGraph's):

- `app_request_us`: the whole app (middleware, routing, decode, state token, graph, response) on a raw
  ASGI call;
- `graph_run_us`: the agent's `run` on an already decoded, checked request (the graph run to its
  outcome, sealing included);
- `nodes_us`: each node of that run called directly with the state the graph hands it (GRACE: the
  nodes the 40-hit step visits, each with the ending it runs; proposals: the one `generate` step);
- `langgraph_us`: `graph_run_us` minus the nodes: what running them as a LangGraph graph adds (this
  includes the nodes running somewhat slower amid the framework's work than alone in a loop);
- GRACE's `seal_us`: sealing the session the step ends with (part of the last node's figure).

    python -m bench.step_breakdown [--runs 500] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from bench import proposal_quality_throughput as proposals
from bench.grace_throughput import STEP_PATH, ranked_hits
from bench.tools import emit_in_process
from contracts.grace import GraceRequest, GraceState
from contracts.proposal_quality import ProposalRunRequest, ReportKind
from graphs.context import AgentContext
from graphs.grace import nodes as grace_nodes
from graphs.grace import run as grace_run
from graphs.proposal_quality import nodes as proposal_nodes
from graphs.proposal_quality import run as proposal_run
from graphs.proposal_quality.board import board_from_dashboard
from graphs.proposal_quality.state import ProposalRun
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.request_runner import SERVICES_KEY, decode_strict
from librarian_svc.services import Services
from librarian_svc.startup_gc import prepare_collector_for_serving
from tests.support.asgi import post_scope

MODULE = "bench.step_breakdown"
ASKS = "CPU per request in-process: whole app, graph run, our nodes alone, LangGraph's share"
"""What the report answers."""
NODES: dict[str, Callable[..., Awaitable[Command[Any]]]] = {
    "take_request": grace_nodes.take_request,
    "reason": grace_nodes.reason,
    "replan": grace_nodes.replan_node,
}
"""GRACE's graph nodes by their names in `build_graph`."""
Call = Callable[[], Awaitable[object]]


async def asgi_post(app: Any, path: str, body: bytes) -> tuple[int, bytes]:
    """POST `body` to `app` as one ASGI request; the status and the body of the answer."""
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        raise AssertionError("unreachable")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = post_scope(path, body)
    await app(scope, receive, send)
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return int(sent[0]["status"]), payload


async def cpu_us(call: Call, runs: int, rounds: int) -> float:
    """Median over `rounds` of the process CPU time per call of `runs` calls, in µs (after a warm-up round)."""
    for _ in range(runs // 5 + 1):
        await call()
    per_round = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(runs):
            await call()
        per_round.append((time.process_time() - started) / runs * 1e6)
    return round(statistics.median(per_round), 1)


def request_context(services: Services, seal: Callable[[Any], str] | None) -> AgentContext:
    return services.request_context(30_000, request_id="bench", seal_state=seal, waited_s=0.0)


async def grace(app: Any, services: Services, runs: int, rounds: int) -> dict[str, Any]:
    question, hits = ranked_hits()  # the throughput benchmark's question and 40 hits
    status, first = await asgi_post(app, STEP_PATH, msgspec.json.encode({"request_id": "b0", "query": question}))
    search = json.loads(first)
    assert status == 200, first[:300]
    assert search["action"] == "SEARCH", first[:300]
    answer = {"step_id": search["step_id"], "hits": hits}
    body = msgspec.json.encode({"request_id": "b1", "state": search["state"], "tool_result": answer})
    request = decode_strict(body, GraceRequest)
    state_spec = grace_run.SPEC.state
    assert state_spec is not None
    prior = services.codec.open(request.state, agent="grace", schema_version=state_spec.version, state_type=GraceState)
    seal = partial(services.codec.seal, agent="grace", schema_version=state_spec.version)
    graph = services.graphs["grace"]

    async def graph_run() -> object:
        return await grace_run.step(graph, request_context(services, seal), request, prior)

    # The states the graph hands each node on this step: entry, then after the search is judged.
    runtime = Runtime(context=request_context(services, seal))
    states: list[dict[str, Any]] = [dict(grace_run._inputs(runtime.context, request, prior))]
    visited: list[str] = ["take_request"]
    while True:
        command = await NODES[visited[-1]](states[-1], runtime)
        update, goto = command.update, command.goto
        assert isinstance(update, dict)
        assert isinstance(goto, str)
        states.append({**states[-1], **update, "events": [*states[-1]["events"], *update.get("events", [])]})
        if goto == END:
            break
        visited.append(goto)
    node_us = {}
    for name, state in zip(visited, states, strict=False):
        node_us[name] = await cpu_us(partial(NODES[name], state, runtime), runs, rounds)
    return _parts(
        app_request_us=await cpu_us(partial(asgi_post, app, STEP_PATH, body), runs, rounds),
        graph_run_us=await cpu_us(graph_run, runs, rounds),
        nodes_us=node_us,
        seal_us=await cpu_us(_awaitable(partial(seal, states[-1]["session"])), runs, rounds),
    )


async def proposal(app: Any, services: Services, kind: ReportKind, runs: int, rounds: int) -> dict[str, Any]:
    body = proposals.payloads()[kind]
    request = decode_strict(body, ProposalRunRequest)
    graph = services.graphs["proposal_quality"]
    run_kind = proposal_run.run_organizer if kind == "organizer" else proposal_run.run_advisor
    board = board_from_dashboard(request.dashboard)
    run = ProposalRun(kind=kind, request=request, request_id="bench", board=board, max_attempts=1)
    runtime = Runtime(context=request_context(services, None))

    async def graph_run() -> object:
        return await run_kind(graph, request_context(services, None), request, None)

    return _parts(
        app_request_us=await cpu_us(partial(asgi_post, app, proposals.PATHS[kind], body), runs, rounds),
        graph_run_us=await cpu_us(graph_run, runs, rounds),
        nodes_us={"generate": await cpu_us(partial(proposal_nodes.generate, {"run": run}, runtime), runs, rounds)},
    )


def _awaitable(fn: Callable[[], object]) -> Call:
    async def call() -> object:
        return fn()

    return call


def _parts(*, app_request_us: float, graph_run_us: float, nodes_us: dict[str, float], **extra: float) -> dict[str, Any]:
    return {
        "app_request_us": app_request_us,
        "graph_run_us": graph_run_us,
        "nodes_us": nodes_us,
        "langgraph_us": round(graph_run_us - sum(nodes_us.values()), 1),
        "outside_graph_us": round(app_request_us - graph_run_us, 1),
        **extra,
    }


async def measure(runs: int, rounds: int) -> dict[str, Any]:
    app = create_app()
    async with app.lifespan():
        prepare_collector_for_serving()  # as a worker serves: its start-up heap frozen, young collections rarer
        services: Services = app.state[SERVICES_KEY]
        return {
            "grace": await grace(app, services, runs, rounds),
            "organizer": await proposal(app, services, "organizer", runs, rounds),
            "advisor": await proposal(app, services, "advisor", runs, rounds),
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    # As deployed (JSON lines, INFO: the access line is part of a request's cost), written to /dev/null so
    # stdout holds only the report.
    with open(os.devnull, "w") as sink:
        configure_logging("json", "INFO", stream=sink)
        figures = asyncio.run(measure(args.runs, args.rounds))
    emit_in_process(MODULE, ASKS, argv or [], args, figures)


if __name__ == "__main__":
    main()
