"""What a worker whose event loop is stuck costs the instance's clients, and how soon it ends.

For each of `--starts` server starts of each variant (alternating, so a busy spell of the machine slows
both alike): the service with `WEB_CONCURRENCY=2` and a route that holds its worker's event loop without
ever awaiting (`tests.support.spin_service`'s `/test/spin?check=false`, a stand-in for a bug). One request
holds a worker's loop for `--stall` seconds; meanwhile `--probes` requests (`GET /health`), each on a
connection of its own, one every `--spacing` seconds, are timed. The kernel gives about half of them to
the stuck worker's socket (`librarian_svc/worker_sockets.py`), where they wait until a worker accepts
them again.

Subject: `python -m tests.support.spin_service`, whose workers answer the supervisor's health ping from
their event loop (`librarian_svc/worker_process.py`): the stuck worker is replaced after
`WORKER_HUNG_AFTER_S` (the default, 5 s), on its socket.
Baseline: `python -m bench.thread_pong_variant`, the same with uvicorn's answer from a thread: the stuck
worker answers on, and its connections wait for the stall to end.

    python -m bench.stuck_worker [--starts 2] [--stall 20] [--probes 40] [--spacing 0.25]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.thread_pong_variant import MODULE as THREAD_PONG_MODULE
from bench.tools import command_line, emit, free_port, log, machine_info, ratio, server_process

MODULE = "bench.stuck_worker"
WORKERS = 2
SLOW_PROBE_S = 1.0
"""A probe slower than this waited for a worker (an idle service answers `/health` in about a millisecond)."""
VARIANTS = {"answer_from_loop": "tests.support.spin_service", "answer_from_thread": THREAD_PONG_MODULE}


def timed_get(url: str, timeout: float) -> float | None:
    """Seconds until `url` answered 200 on a connection of its own; None when it failed."""
    started = time.monotonic()
    try:
        with httpx.Client(timeout=timeout) as client:
            answered = client.get(url, headers={"Connection": "close"})
    except httpx.TransportError:
        return None
    return time.monotonic() - started if answered.status_code == 200 else None


def stuck_request(base_url: str, stall_s: float, ended: dict[str, Any]) -> None:
    """Hold a worker's loop for `stall_s`; note when and how it ended (answered, or dropped with its worker)."""
    started = time.monotonic()
    try:
        with httpx.Client(timeout=stall_s + 30) as client:
            answer = client.post(
                f"{base_url}/test/spin", params={"check": "false", "seconds": stall_s}, headers={"Connection": "close"}
            )
        ended["outcome"] = f"answered {answer.status_code}"
    except httpx.TransportError as exc:
        ended["outcome"] = f"dropped ({type(exc).__name__})"
    ended["after_s"] = round(time.monotonic() - started, 2)


def one_start(module: str, stall_s: float, probes: int, spacing_s: float) -> dict[str, Any]:
    """Start the server, stall one worker, time the probes sent meanwhile; the start's figures."""
    port = free_port()
    env = {"PORT": str(port), "WEB_CONCURRENCY": str(WORKERS), "LOG_LEVEL": "warning"}
    with server_process((sys.executable, "-m", module), port=port, env=env, ready_path="/ready"):
        base_url = f"http://127.0.0.1:{port}"
        ended: dict[str, Any] = {}
        stuck = threading.Thread(target=stuck_request, args=(base_url, stall_s, ended))
        stuck.start()
        time.sleep(spacing_s)  # the stall begins before the first probe
        with ThreadPoolExecutor(probes) as pool:
            waits = []
            for _ in range(probes):
                waits.append(pool.submit(timed_get, f"{base_url}/health", stall_s + 30))
                time.sleep(spacing_s)
            latencies = [wait.result() for wait in waits]
        stuck.join()
    return start_figures(latencies, ended)


def start_figures(latencies: list[float | None], stuck: dict[str, Any]) -> dict[str, Any]:
    """One start's figures: how its probes fared, and how the stuck request ended."""
    answered = [latency for latency in latencies if latency is not None]
    return {
        "probes": len(latencies),
        "failed_probes": len(latencies) - len(answered),
        "slow_probes": sum(latency > SLOW_PROBE_S for latency in answered),
        "slowest_probe_s": round(max(answered, default=0.0), 2),
        "probe_wait_s_total": round(sum(answered), 2),
        "stuck_request": stuck,
    }


def summary(starts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "starts": len(starts),
        "probes": sum(start["probes"] for start in starts),
        "failed_probes": sum(start["failed_probes"] for start in starts),
        "slow_probes": sum(start["slow_probes"] for start in starts),
        "slowest_probe_s": max(start["slowest_probe_s"] for start in starts),
        "median_probe_wait_s_total": round(statistics.median(start["probe_wait_s_total"] for start in starts), 2),
        "runs": starts,
    }


def run(starts: int, stall_s: float, probes: int, spacing_s: float, argv: list[str]) -> dict[str, Any]:
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for index in range(starts):
        for name, module in VARIANTS.items():
            figures = one_start(module, stall_s, probes, spacing_s)
            measured[name].append(figures)
            log(
                f"start {index + 1}/{starts} {name}: {figures['slow_probes']} of {probes} probes over "
                f"{SLOW_PROBE_S} s, "
                f"slowest {figures['slowest_probe_s']} s; the stuck request {figures['stuck_request']}"
            )
    subject, baseline = summary(measured["answer_from_loop"]), summary(measured["answer_from_thread"])
    return {
        "benchmark": "stuck_worker",
        "question": "with two workers, how long do new connections wait when one worker's event loop is stuck?",
        "command": command_line(MODULE, argv),
        "servers": {
            "answer_from_loop": "python -m tests.support.spin_service  # WEB_CONCURRENCY=2, WORKER_HUNG_AFTER_S=5",
            "answer_from_thread": f"python -m {THREAD_PONG_MODULE}  # the same, uvicorn's health answer from a thread",
        },
        "stall": f"POST /test/spin?check=false&seconds={stall_s} (holds one worker's loop, never awaits)",
        "probes": f"{probes} × GET /health, one every {spacing_s} s, each on a connection of its own",
        "slow_probe_s": SLOW_PROBE_S,
        "answer_from_loop": subject,
        "answer_from_thread": baseline,
        "ratio_slowest_probe": ratio(baseline["slowest_probe_s"], subject["slowest_probe_s"]),
        "ratio_probe_wait": ratio(baseline["median_probe_wait_s_total"], subject["median_probe_wait_s_total"]),
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=2, help="server starts of each variant (alternating)")
    parser.add_argument("--stall", type=float, default=20.0, help="seconds the stuck request holds its worker's loop")
    parser.add_argument("--probes", type=int, default=40, help="probe requests sent during the stall")
    parser.add_argument("--spacing", type=float, default=0.25, help="seconds between probes")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args.starts, args.stall, args.probes, args.spacing, sys.argv[1:] if argv is None else argv)
    emit(report, args.output)


if __name__ == "__main__":
    main()
