"""Do both workers serve? A client's connections over two workers: one socket per worker against one shared socket.

For each of `--starts` server starts of each variant (alternating, so a busy spell of the machine slows
both alike): `python -m librarian_svc` with `WEB_CONCURRENCY=2`, walked to GRACE's 40-hit step (the
payload of `bench.grace_throughput`, a CPU-bound step of ~2 ms), then `--rounds` wrk rounds, each
opening its `--connections` connections at once, as a client's pool does, with each worker's CPU
read from /proc around it. A round's connections stay with the worker that accepted them, as a
kept-alive client's do: a worker with under `IDLE_SHARE` of the round's worker CPU was left idle, its
vCPU paid for and unused.

Subject: the service, one listening socket per worker (SO_REUSEPORT, `librarian_svc/worker_sockets.py`).
Baseline: `bench.shared_socket_variant`, the same service with its workers on one shared socket, as
uvicorn binds it (each new connection goes to whichever worker accepts first).

    python -m bench.worker_balance [--starts 4] [--rounds 15] [--connections 8] [--duration 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.grace_throughput import STEP_PATH, build_payload
from bench.proc_stats import cpu_seconds, worker_pids
from bench.shared_socket_variant import MODULE as SHARED_MODULE
from bench.tools import (
    WrkSettings,
    command_line,
    emit,
    ensure_wrk,
    free_port,
    log,
    machine_info,
    post_script,
    ratio,
    run_wrk,
    server_process,
    shown_wrk_command,
)

MODULE = "bench.worker_balance"
WORKERS = 2
IDLE_SHARE = 0.1
"""A worker with less than this share of the round's worker CPU was left idle."""
VARIANTS = {"socket_per_worker": "librarian_svc", "shared_socket": SHARED_MODULE}
SIGNING_KEY = "bench-worker-balance-signing-key"
"""Every start's state key, so the step's body (its state token) is walked to once for all of them."""


def one_start(
    module: str, settings: WrkSettings, rounds: int, body: bytes | None = None
) -> tuple[list[dict[str, Any]], bytes]:
    """Start the server and run `rounds` wrk rounds, each on connections of its own; each round's figures.

    Without `body`, the server is first walked to the step (every start signs with `SIGNING_KEY`, so one
    walk serves them all); the body POSTed is returned for the next start.
    """
    port = free_port()
    argv = (sys.executable, "-m", module)
    env = {
        "PORT": str(port),
        "WEB_CONCURRENCY": str(WORKERS),
        "LOG_LEVEL": "warning",
        "STATE_SIGNING_KEYS": SIGNING_KEY,
    }
    with server_process(argv, port=port, env=env, ready_path="/ready") as process:
        base_url = f"http://127.0.0.1:{port}"
        if body is None:
            body, _ = build_payload(base_url, 0, 300)
        workers = worker_pids(process.pid)
        if len(workers) != WORKERS:
            raise RuntimeError(f"{module}: expected {WORKERS} workers, found {workers}")
        wrk, url = ensure_wrk(), f"{base_url}{STEP_PATH}"
        with post_script(body) as script:
            figures = [one_round(wrk, url, script, settings, workers) for _ in range(rounds)]
    return figures, body


def one_round(wrk: str, url: str, script: Path, settings: WrkSettings, workers: list[int]) -> dict[str, Any]:
    """One wrk round (its connections open at once), each worker's CPU read from /proc around it."""
    before = [cpu_seconds(pid) or 0.0 for pid in workers]
    result = run_wrk(wrk, url, script, settings, warmup=False)
    after = [cpu_seconds(pid) or 0.0 for pid in workers]
    return round_figures(
        result.requests_per_s, result.p99_ms, [end - start for start, end in zip(before, after, strict=True)]
    )


def round_figures(requests_per_s: float, p99_ms: float, worker_cpu_s: list[float]) -> dict[str, Any]:
    """A round's figures: its throughput, each worker's CPU, and whether a worker was left idle (`IDLE_SHARE`)."""
    total = sum(worker_cpu_s) or 1.0
    return {
        "requests_per_s": requests_per_s,
        "p99_ms": p99_ms,
        "worker_cpu_s": [round(used, 3) for used in worker_cpu_s],
        "busier_worker_share": round(max(worker_cpu_s) / total, 3),
        "idle_worker": min(worker_cpu_s) / total < IDLE_SHARE,
    }


def summary(rounds: list[dict[str, Any]], starts: int) -> dict[str, Any]:
    rates = [measured["requests_per_s"] for measured in rounds]
    return {
        "starts": starts,
        "rounds": len(rounds),
        "rounds_with_an_idle_worker": sum(measured["idle_worker"] for measured in rounds),
        "median_requests_per_s": round(statistics.median(rates), 1),
        "min_requests_per_s": min(rates),
        "max_busier_worker_share": max(measured["busier_worker_share"] for measured in rounds),
        "runs": rounds,
    }


def run(starts: int, rounds: int, settings: WrkSettings, argv: list[str]) -> dict[str, Any]:
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    body: bytes | None = None
    for index in range(starts):
        for name, module in VARIANTS.items():
            figures, body = one_start(module, settings, rounds, body)
            measured[name] += figures
            idle = sum(round_["idle_worker"] for round_ in figures)
            log(f"start {index + 1}/{starts} {name}: {idle} of {rounds} rounds left a worker idle")
    subject = summary(measured["socket_per_worker"], starts)
    baseline = summary(measured["shared_socket"], starts)
    return {
        "benchmark": "worker_balance",
        "question": "with two workers, does a client's burst of connections reach both (both vCPUs used)?",
        "command": command_line(MODULE, argv),
        "servers": {
            "socket_per_worker": "python -m librarian_svc  # WEB_CONCURRENCY=2, one SO_REUSEPORT socket per worker",
            "shared_socket": f"python -m {SHARED_MODULE}  # WEB_CONCURRENCY=2, one socket shared by the workers",
        },
        "payload": "GRACE 40-hit step answering COMPLETE (bench.grace_throughput's body)",
        "wrk": shown_wrk_command(settings),
        "idle_share": IDLE_SHARE,
        "socket_per_worker": subject,
        "shared_socket": baseline,
        "ratio_min_requests_per_s": ratio(subject["min_requests_per_s"], baseline["min_requests_per_s"]),
        "ratio_median_requests_per_s": ratio(subject["median_requests_per_s"], baseline["median_requests_per_s"]),
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=4, help="server starts of each variant (alternating)")
    parser.add_argument("--rounds", type=int, default=15, help="wrk rounds per start, each on new connections")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections, opened at once")
    parser.add_argument("--duration", type=int, default=1, help="seconds of each wrk round")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    settings = WrkSettings(connections=args.connections, duration_s=args.duration, warmup_s=0)
    emit(run(args.starts, args.rounds, settings, sys.argv[1:] if argv is None else argv), args.output)


if __name__ == "__main__":
    main()
