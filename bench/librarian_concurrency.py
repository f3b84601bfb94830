"""Concurrency with a slow model (issue 7 item 1): does one worker overlap model waits?

One service process (one uvicorn worker) whose provider is the loopback fake OpenAI-compatible
server answering every call after `--model-ms` (500 ms). N concurrent Librarian sessions each loop
SEARCH → COMPLETE (two think steps, one model call each) for `--seconds`. If nothing blocks the
event loop, N sessions complete N / model latency think steps per second: that is the bound.
Reported: throughput / bound, p50 and p99 of a think step / model latency. The contrast run
(`--blocking`) serves the same traffic with the model called synchronously on the event loop (as a
naive `model.invoke` inside an async handler would), which serialises every call.

    python -m bench.librarian_concurrency [--concurrency 80 256] [--model-ms 500] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.tools import PROJECT_ROOT
from tests.support.live_service import free_port, start_service

DECISION = json.dumps(
    {
        "sufficient": True,
        "missing": [],
        "selected": [{"id": "c1", "why_relevant": "states the height"}],
        "queries_text": ["東京タワー 高さ"],
        "queries_vector": [],
        "rationale": "look up the height",
        "coverage_notes": "height stated",
    },
    ensure_ascii=False,
)
QUESTION = "東京タワーの高さは何メートルですか"
HITS = [
    {"document_id": f"doc-{i}", "page": i, "snippet": f"東京タワーの高さは333メートル。資料{i}。", "score": 5.0 - i}
    for i in range(5)
]


def start_fake_model(delay_ms: float) -> tuple[subprocess.Popen[bytes], str]:
    """The fake provider in its own process, so it never competes with the service's event loop."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.llm_server",
            "--port",
            str(port),
            "--delay-ms",
            str(delay_ms),
            "--reply",
            DECISION,
        ],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            return process, f"{url}/v1"
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("fake model server did not start")


async def session(client: httpx.AsyncClient, index: int, latencies: list[float], stop: float) -> tuple[int, int, int]:
    """Loop SEARCH → COMPLETE until `stop`; return (think steps, failures, connection resets retried)."""
    steps = failures = resets = 0
    loop = 0
    while time.monotonic() < stop:
        loop += 1
        body: dict[str, Any] = {"request_id": f"s{index}-{loop}", "user_query": QUESTION, "subject_id": "bench"}
        for _ in range(3):
            started = time.monotonic()
            try:
                response = await client.post("/agent/librarian/think", json=body)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                resets += 1  # counted, then the same step again: a think step is a pure function of its body
                response = await client.post("/agent/librarian/think", json=body)
            latencies.append(time.monotonic() - started)
            steps += 1
            answer = response.json()
            if response.status_code != 200 or answer.get("action") == "ERROR":
                failures += 1
                break
            if answer["action"] != "SEARCH":
                break
            round_ = {
                "queries_text": answer["queries_text"],
                "queries_vector": answer["queries_vector"],
                "results": HITS,
            }
            body = {**body, "state": answer["state"], "search_history": [*body.get("search_history", []), round_]}
    return steps, failures, resets


async def drive(base_url: str, concurrency: int, seconds: float) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        warm: list[float] = []
        await asyncio.gather(*(session(client, -i, warm, time.monotonic() + 2) for i in range(concurrency)))
        latencies: list[float] = []
        started = time.monotonic()
        results = await asyncio.gather(*(session(client, i, latencies, started + seconds) for i in range(concurrency)))
        elapsed = time.monotonic() - started
    steps = sum(r[0] for r in results)
    failures = sum(r[1] for r in results)
    resets = sum(r[2] for r in results)
    latencies.sort()
    return {
        "think_steps": steps,
        "failures": failures,
        "connection_resets_retried": resets,
        "elapsed_s": round(elapsed, 2),
        "steps_per_s": round(steps / elapsed, 1),
        "p50_s": round(statistics.median(latencies), 3),
        "p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
    }


def run(concurrency: int, model_ms: float, seconds: float, *, blocking: bool, log_dir: Path) -> dict[str, Any]:
    model, model_url = start_fake_model(model_ms)
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "OPENAI_BASE_URL": model_url,
        "LLM_MODEL": "fake",
        "LOG_LEVEL": "warning",
        "LLM_TIMEOUT_MS": "30000",
        "REQUEST_TIMEOUT_MS": "60000",
    }
    extra = ["--blocking-model"] if blocking else []
    module = "bench.blocking_variant" if blocking else None
    service = start_service(env, log_dir=log_dir, module=module, extra_args=extra)
    try:
        figures = asyncio.run(drive(service.base_url, concurrency, seconds))
    finally:
        service.stop()
        model.terminate()
        model.wait()
    bound = concurrency / (model_ms / 1000)
    figures |= {
        "concurrency": concurrency,
        "bound_steps_per_s": round(bound, 1),
        "ratio_throughput_over_bound": round(figures["steps_per_s"] / bound, 3),
        "ratio_p50_over_model_latency": round(figures["p50_s"] / (model_ms / 1000), 3),
        "ratio_p99_over_model_latency": round(figures["p99_s"] / (model_ms / 1000), 3),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[80, 256])
    parser.add_argument("--model-ms", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--blocking-concurrency", type=int, default=8, help="concurrency of the blocking contrast")
    args = parser.parse_args()
    log_dir = PROJECT_ROOT / "bench" / "results" / "logs"
    runs = [run(c, args.model_ms, args.seconds, blocking=False, log_dir=log_dir) for c in args.concurrency]
    contrast = run(args.blocking_concurrency, args.model_ms, min(args.seconds, 10), blocking=True, log_dir=log_dir)
    report = {
        "benchmark": "librarian_concurrency",
        "command": "python -m bench.librarian_concurrency " + " ".join(sys.argv[1:]),
        "model_latency_ms": args.model_ms,
        "runs": runs,
        "blocking_contrast": contrast,
        "targets": {"ratio_throughput_over_bound_at_80": ">= 0.9", "ratio_p99_over_model_latency_at_80": "<= 1.3"},
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
