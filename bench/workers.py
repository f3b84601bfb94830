"""Start-up, memory and shutdown of `python -m librarian_svc` with one worker and with several.

For each `WEB_CONCURRENCY` (runs alternate, so a busy machine slows both alike):

- start-up: seconds from spawning the process to the first `200` from `/ready` (what Cloud Run's
  startup probe waits for), and to every worker's "worker ready" log line;
- memory: resident set and proportional share (PSS) of the supervisor, the fork server and each worker
  once all are ready, and the instance's PSS in all (`/proc`, Linux);
- shutdown: seconds from SIGTERM to exit, idle, and with a Librarian step in flight whose model
  answers only after 30 s (it must answer ERROR TIMEOUT within `SHUTDOWN_GRACE_S` and the process exit
  before Cloud Run's 10 s);
- replacement (several workers): seconds from killing a worker to its successor's "worker ready" line.

The model is `tests.fakes.llm_server` on loopback. No target: the figures go in the README.

With `--compare-spawn`, each run with several workers is followed by the same with the workers spawned
(`bench.spawn_variant`, uvicorn's way) instead of forked from the fork server, and the report gives
the ratios (spawned over fork server) of start-up, replacement and the instance's memory.

    python -m bench.workers [--runs 3] [--workers 1 2] [--compare-spawn] [--output report.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.proc_stats import children, pss_mb, role, rss_mb, worker_pids
from bench.tools import PROJECT_ROOT, child_env, emit, free_port, log, machine_info, ratio
from tests.fakes.llm_server import FakeLLMServer, Reply

MODULE = "bench.workers"
SPAWN_MODULE = "bench.spawn_variant"
GRACE_S = 8.0
DECISION = json.dumps({"sufficient": True, "missing": [], "selected": [], "queries_text": [], "queries_vector": []})


def ready_lines(log_path: Path) -> int:
    return sum(
        1 for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if "worker ready" in line
    )


def think_request(request_id: str) -> dict[str, Any]:
    hits = [
        {
            "document_id": f"d{i}",
            "page": i,
            "chunk_id": f"d{i}#0",
            "snippet": f"富士山の標高は3776メートル。{i}",
            "score": 1.0,
        }
        for i in range(5)
    ]
    return {
        "request_id": request_id,
        "user_query": "富士山の標高は?",
        "subject_id": "s",
        "search_history": [{"queries_text": ["富士山 標高"], "queries_vector": [], "results": hits}],
    }


def one_run(
    workers: int, llm: FakeLLMServer, in_flight: bool, log_dir: Path, module: str = "librarian_svc"
) -> dict[str, Any]:
    port = free_port()
    log_path = log_dir / f"workers-{workers}-{port}.log"
    env = child_env(
        {
            "PORT": str(port),
            "WEB_CONCURRENCY": str(workers),
            "SHUTDOWN_GRACE_S": str(GRACE_S),
            "LLM_PROVIDER": "openai-compatible",
            "OPENAI_BASE_URL": llm.url,
            "LLM_MODEL": "fake",
            "LLM_MAX_RETRIES": "0",
            "LLM_TIMEOUT_MS": "40000",
            "REQUEST_TIMEOUT_MS": "45000",
        }
    )
    started = time.monotonic()
    with log_path.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", module], cwd=PROJECT_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    ready_s = all_ready_s = None
    deadline = started + 180
    while time.monotonic() < deadline and process.poll() is None:
        if ready_s is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1.0).status_code == 200:
                    ready_s = time.monotonic() - started
            except httpx.HTTPError:
                pass
        if ready_s is not None and ready_lines(log_path) >= workers:
            all_ready_s = time.monotonic() - started
            break
        time.sleep(0.02)
    result: dict[str, Any] = {"ready_s": ready_s, "all_workers_ready_s": all_ready_s} | memory(process.pid, workers)
    if workers > 1:
        result["replacement_s"] = replacement_s(process.pid, log_path, workers)
    answer: dict[str, Any] = {}
    if in_flight:
        llm.default_reply = Reply(content=DECISION, delay_s=30.0)
        calls = len(llm.chat_requests)

        def post() -> None:
            sent = time.monotonic()
            response = httpx.post(f"http://127.0.0.1:{port}/agent/librarian/think", json=think_request("w"), timeout=20)
            answer.update(status=response.status_code, body=response.json(), at=time.monotonic(), sent=sent)

        thread = threading.Thread(target=post, daemon=True)
        thread.start()
        while len(llm.chat_requests) == calls:
            time.sleep(0.01)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    status = process.wait(timeout=30)
    result["sigterm_to_exit_s"] = round(time.monotonic() - signalled, 3)
    result["exit_status"] = status
    if in_flight:
        thread.join(timeout=5)
        body = answer.get("body", {})
        result["in_flight_answer"] = {
            "status": answer.get("status"),
            "action": body.get("action"),
            "error_type": body.get("error_type"),
            "answered_after_sigterm_s": round(answer["at"] - signalled, 3) if "at" in answer else None,
        }
        llm.default_reply = Reply(content=DECISION)
    return result


def replacement_s(root: int, log_path: Path, workers: int) -> float | None:
    """Seconds from killing a worker (SIGKILL) to its successor's "worker ready" line."""
    killed = time.monotonic()
    os.kill(worker_pids(root)[0], signal.SIGKILL)
    while time.monotonic() - killed < 60:
        if ready_lines(log_path) > workers:
            return round(time.monotonic() - killed, 3)
        time.sleep(0.01)
    return None


def memory(root: int, workers: int) -> dict[str, Any]:
    """Each process's resident set and share (PSS), and the instance's PSS in all (what the limit counts)."""
    processes = {"supervisor" if workers > 1 else "process": root}
    if workers > 1:
        processes |= {kind: pid for pid in children(root) if (kind := role(pid)) != "worker"}
        processes |= {f"worker_{i + 1}": pid for i, pid in enumerate(worker_pids(root))}
    pss = {name: pss_mb(pid) for name, pid in processes.items()}
    return {
        "rss_mb": {name: rss_mb(pid) for name, pid in processes.items()},
        "pss_mb": pss,
        "total_pss_mb": round(sum(value or 0.0 for value in pss.values()), 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--log-dir", type=Path, default=Path("/tmp/bench-workers"))
    parser.add_argument(
        "--compare-spawn",
        action="store_true",
        help=f"after each run with several workers, the same with them spawned (`{SPAWN_MODULE}`), for the ratios",
    )
    args = parser.parse_args(argv)
    args.log_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[int, list[dict[str, Any]]] = {w: [] for w in args.workers}
    spawned: dict[int, list[dict[str, Any]]] = {w: [] for w in args.workers if w > 1 and args.compare_spawn}
    with FakeLLMServer(default_reply=Reply(content=DECISION)) as llm:
        for index in range(args.runs):
            for workers in args.workers:
                in_flight = index % 2 == 0
                log(f"run {index + 1}: WEB_CONCURRENCY={workers}, {'a step in flight' if in_flight else 'idle'}")
                runs[workers].append(one_run(workers, llm, in_flight, args.log_dir))
                if workers in spawned:
                    log(f"run {index + 1}: WEB_CONCURRENCY={workers}, spawned workers ({SPAWN_MODULE})")
                    spawned[workers].append(one_run(workers, llm, in_flight, args.log_dir, SPAWN_MODULE))

    def median(workers: int, key: str, measured: dict[int, list[dict[str, Any]]] = runs) -> float | None:
        values = [r[key] for r in measured[workers] if r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    def against_spawned(key: str) -> dict[int, float | None]:
        """The spawned workers' median over the fork server's (above 1: the fork server is the faster or smaller)."""
        return {w: ratio(median(w, key, spawned) or 0.0, median(w, key) or 0.0) for w in spawned}

    emit(
        {
            "benchmark": MODULE,
            "command": " ".join(["python", "-m", MODULE, *(argv or sys.argv[1:])]),
            "shutdown_grace_s": GRACE_S,
            "cpus_available": len(os.sched_getaffinity(0)),
            "median_ready_s": {w: median(w, "ready_s") for w in args.workers},
            "median_all_workers_ready_s": {w: median(w, "all_workers_ready_s") for w in args.workers},
            # the probe's wait with several workers against one worker's, same run
            "ratio_ready_s_over_one_worker": {
                w: ratio(median(w, "ready_s") or 0.0, median(args.workers[0], "ready_s") or 0.0) for w in args.workers
            },
            "median_replacement_s": {w: median(w, "replacement_s") for w in args.workers if w > 1},
            "median_total_pss_mb": {w: median(w, "total_pss_mb") for w in args.workers},
            "runs": runs,
            **(
                {
                    "spawned_median_ready_s": {w: median(w, "ready_s", spawned) for w in spawned},
                    "spawned_median_replacement_s": {w: median(w, "replacement_s", spawned) for w in spawned},
                    "spawned_median_total_pss_mb": {w: median(w, "total_pss_mb", spawned) for w in spawned},
                    "ratio_ready_s_spawned_over_fork_server": against_spawned("ready_s"),
                    "ratio_replacement_s_spawned_over_fork_server": against_spawned("replacement_s"),
                    "ratio_total_pss_spawned_over_fork_server": against_spawned("total_pss_mb"),
                    "spawned_runs": spawned,
                }
                if spawned
                else {}
            ),
            "machine": machine_info(),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
