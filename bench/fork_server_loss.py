"""How long a killed fork server holds the supervisor's loop: the replacements' starts on a thread, or in the loop.

Each run is a fresh process that is itself the supervisor (`python -m librarian_svc`'s `main`, two workers,
the embedded engine), with its loop's ticks timed. Once `/ready` answers 200 the fork server is killed
(SIGKILL, as the kernel's OOM killer would), and `--after` seconds later the process sends itself SIGTERM,
as Cloud Run would. Starting the replacements brings up a new fork server, which imports everything it
preloads before it forks anything.

Subject: the service, each replacement's start on a thread (`librarian_svc/worker_starts.py`).
Baseline (`inline`): the same with the start run in the tick, as the supervisor did before.
Reported per variant: the longest tick after the kill, and how long after SIGTERM the supervisor began
draining its workers (median of the runs, which alternate between the variants).

    python -m bench.fork_server_loss [--runs 3] [--after 0.3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing.forkserver
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.tools import child_env, command_line, emit, free_port, http_status, log, machine_info, ratio

MODULE = "bench.fork_server_loss"
VARIANTS = ("thread", "inline")
MARKER = "FORK_SERVER_LOSS "
"""Prefixes the one line of figures a run prints (the service's own log lines share its output)."""


def one_run(variant: str, port: int, after_s: float) -> None:
    """In the run's process: be the supervisor, kill the fork server once ready, SIGTERM self; print the figures."""
    from librarian_svc import workers
    from librarian_svc.__main__ import main
    from librarian_svc.worker_starts import WorkerStarts

    if variant == "inline":
        begin = WorkerStarts.begin

        def begin_inline(self: WorkerStarts, index: int, process: Any, now: float) -> None:
            """The service's start, waited for in the tick that began it, as the supervisor did before."""
            begin(self, index, process, now)
            for thread in threading.enumerate():
                if thread.name == f"worker-start-{index}":
                    thread.join()

        WorkerStarts.begin = begin_inline  # type: ignore[method-assign]

    ticks: list[tuple[float, float]] = []
    marks: dict[str, float] = {}
    tick = workers.Supervisor.keep_subprocess_alive
    terminate_all = workers.Supervisor.terminate_all
    supervise = workers.supervise

    def timed_tick(self: workers.Supervisor) -> None:
        began = time.monotonic()
        tick(self)
        ticks.append((began, time.monotonic() - began))

    def noted_terminate_all(self: workers.Supervisor) -> None:
        marks.setdefault("draining", time.monotonic())
        terminate_all(self)

    def reporting_supervise(config: Any) -> int:
        status = supervise(config)
        after_kill = [duration for began, duration in ticks if began >= marks["killed"]]
        figures = {
            "variant": variant,
            "longest_tick_s": round(max(after_kill, default=0.0), 3),
            "sigterm_to_draining_s": round(marks["draining"] - marks["sigterm"], 3),
            "exit_status": status,
        }
        print(MARKER + json.dumps(figures), flush=True)
        return status

    def kill_fork_server_then_stop() -> None:
        deadline = time.monotonic() + 60.0
        while http_status(port, "/ready") != 200:
            if time.monotonic() > deadline:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.01)
        fork_server = multiprocessing.forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
        marks["killed"] = time.monotonic()
        os.kill(fork_server, signal.SIGKILL)
        time.sleep(after_s)
        marks["sigterm"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)

    workers.Supervisor.keep_subprocess_alive = timed_tick  # type: ignore[method-assign]
    workers.Supervisor.terminate_all = noted_terminate_all  # type: ignore[method-assign]
    workers.supervise = reporting_supervise
    threading.Thread(target=kill_fork_server_then_stop, daemon=True).start()
    sys.exit(main())


def measure(variant: str, after_s: float) -> dict[str, Any]:
    """One run of `variant` in a fresh process; its figures."""
    port = free_port()
    env = child_env({"PORT": str(port), "WEB_CONCURRENCY": "2", "LOG_LEVEL": "warning"})
    argv = [sys.executable, "-m", MODULE, "--one", variant, "--port", str(port), "--after", str(after_s)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        raise RuntimeError(f"the {variant} run printed no figures (status {done.returncode}): {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(lines[-1].removeprefix(MARKER))
    return figures


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median(key: str) -> float:
        return round(float(statistics.median(figures[key] for figures in runs)), 3)

    return {
        "median_longest_tick_s": median("longest_tick_s"),
        "median_sigterm_to_draining_s": median("sigterm_to_draining_s"),
        "runs": runs,
    }


def run(runs: int, after_s: float, argv: list[str]) -> dict[str, Any]:
    measured: dict[str, list[dict[str, Any]]] = {variant: [] for variant in VARIANTS}
    for index in range(runs):
        for variant in VARIANTS:
            figures = measure(variant, after_s)
            measured[variant].append(figures)
            log(f"run {index + 1}/{runs} {variant}: {figures}")

    subject, baseline = summary(measured["thread"]), summary(measured["inline"])
    return {
        "benchmark": "fork_server_loss",
        "question": "after the fork server is killed, how long is the supervisor's loop held, and SIGTERM unheard?",
        "command": command_line(MODULE, argv),
        "service": "python -m librarian_svc's main in the run's process  # WEB_CONCURRENCY=2, LLM_PROVIDER=heuristic",
        "sigterm_after_kill_s": after_s,
        "thread": subject,
        "inline": baseline,
        "ratio_longest_tick": ratio(baseline["median_longest_tick_s"], subject["median_longest_tick_s"]),
        "ratio_sigterm_to_draining": ratio(
            baseline["median_sigterm_to_draining_s"], subject["median_sigterm_to_draining_s"]
        ),
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant (alternating)")
    parser.add_argument("--after", type=float, default=0.3, help="seconds between the kill and SIGTERM")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--one", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        one_run(args.one, args.port, args.after)
        return
    report = run(args.runs, args.after, sys.argv[1:] if argv is None else argv)
    emit(report, args.output)


if __name__ == "__main__":
    main()
