"""Peak memory of one worker under many of the heaviest requests at once, with and without admission.

    python -m bench.memory_admission [--concurrent 12] [--output FILE]

The same server (`python -m librarian_svc`, one worker, embedded engine) is sent `--concurrent` ACE searches
at once, each the largest playbook the request limits accept (distinct playbooks, so no cache is shared),
first with the default `WORKER_MEMORY_BUDGET_MB` and then with the budget set out of reach (the baseline:
every request admitted at once). Reported per run: the worker's peak RSS (VmHWM), the wall time of the
burst and the distinct statuses. What it showed (README, Benchmarks): admission lowers the peak at a dozen
such requests at once, but at 40 the memory held before admission (bodies, decoding, allocator arenas)
dominates, with or without it.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.hostile import _peak_rss_mb, _playbook, _reset_peak_rss, _wait_idle
from bench.tools import emit, free_port, machine_info, ratio, server_process

MODULE = "bench.memory_admission"


def _search(seed: int) -> dict[str, Any]:
    """The largest ACE search the limits accept (as `bench.hostile`), with a deadline long enough to queue."""
    query = {"query_text": "api page venmo", "top_k": 200, "min_confidence": 0.0}
    return {"query": query, "playbook": _playbook(seed), "constraints": {"timeout_ms": 60_000}}


def burst(budget_mb: int, concurrent: int) -> dict[str, Any]:
    port = free_port()
    env = {"PORT": str(port), "WEB_CONCURRENCY": "1", "LOG_LEVEL": "warning", "WORKER_MEMORY_BUDGET_MB": str(budget_mb)}
    bodies = [_search(seed=100 + i) for i in range(concurrent)]
    with server_process([sys.executable, "-m", "librarian_svc"], port=port, env=env) as process:
        base_url = f"http://127.0.0.1:{port}"
        _wait_idle(process.pid)
        idle = _peak_rss_mb(process.pid)
        _reset_peak_rss(process.pid)

        def send(body: dict[str, Any]) -> str:
            with httpx.Client(base_url=base_url, timeout=120.0) as client:
                answer = client.post("/agent/ace/search", json=body)
                return f"{answer.status_code} {answer.json().get('action')}"

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrent) as pool:
            statuses = list(pool.map(send, bodies))
        wall = time.perf_counter() - started
        peak = _peak_rss_mb(process.pid)
    return {
        "budget_mb": budget_mb,
        "idle_rss_mb": idle,
        "peak_rss_mb": peak,
        "wall_s": round(wall, 2),
        "statuses": sorted(set(statuses)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=12)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    admitted = burst(256, args.concurrent)
    unbounded = burst(1 << 20, args.concurrent)
    emit(
        {
            "benchmark": MODULE,
            "command": f"python -m {MODULE} --concurrent {args.concurrent}",
            "machine": machine_info(),
            "with_admission": admitted,
            "baseline_without_admission": unbounded,
            "ratio_peak_rss_with_over_without": ratio(admitted["peak_rss_mb"] or 0, unbounded["peak_rss_mb"] or 0),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
