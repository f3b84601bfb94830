"""Concurrency with a slow model (issue 7 item 1): does one worker overlap model waits?

One service (one uvicorn worker, or `--workers N`: `WEB_CONCURRENCY=N` worker processes behind one
socket) whose provider is the loopback fake OpenAI-compatible server answering every call after
`--model-ms` (500 ms); with `--provider gemini` the service asks it through `ChatGoogleGenerativeAI` and
Gemini's REST API instead (the full fake; `cloudrun.yaml`'s provider). N concurrent Librarian sessions
each loop SEARCH → COMPLETE (two think steps, one model call each). If nothing blocks the event loop, N
sessions complete N / model latency think steps per second: that is the bound. Sessions ramp up over one
model latency, run `--warm-up` seconds, then a `--seconds` window is measured: steps that complete
inside it, their latency, and the service's CPU time per step (from /proc, summed over the service's
processes), which says how much of its cores the workers need at that rate. The
service logs at its default level, as deployed: one access line per request is part of that CPU.

On one machine the service shares its cores with the fake model and this load generator (and, on
a shared machine, other work): each one's CPU per step and cores held over the window are reported,
with each worker's cores, and `ratio_cpu_ceiling_over_bound` is what the service's CPU per step
would allow with every core to itself. With several workers the load starts once `/ready` answers,
which is once every worker serves (`librarian_svc.instance_readiness`): load sent while only the
first served kept its connections there and measured one core (session 6's 256-session figure).

Reported: throughput / bound, p50 and p99 of a think step / model latency. The contrast run
(`--blocking`) serves the same traffic with the model called synchronously on the event loop (as a
naive `model.invoke` inside an async handler would), which serialises every call.

    python -m bench.librarian_concurrency [--concurrency 80 256] [--model-ms 500] [--seconds 20] [--workers 1]
        [--provider openai-compatible|gemini] [--fake-model lean|full] [--model-client sdk|direct]
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.proc_stats import cpu_seconds, machine_busy_seconds, tree_cpu_seconds, worker_pids
from bench.tools import PROJECT_ROOT, emit
from tests.fakes.llm_server import provider_env
from tests.support.live_service import free_port, start_service

# The scripted model behaves like a competent one: with no candidates it plans a search; once the
# prompt lists candidate c1 it selects it. Every think step is then exactly one model call, so the
# bound below (sessions ÷ model latency) is the true ceiling; an invented id would cost a re-ask.
PLAN = json.dumps(
    {
        "sufficient": False,
        "missing": [],
        "selected": [],
        "queries_text": ["東京タワー 高さ"],
        "queries_vector": [],
        "rationale": "look up the height",
        "coverage_notes": "",
    },
    ensure_ascii=False,
)
SELECT = json.dumps(
    {
        "sufficient": True,
        "missing": [],
        "selected": [{"id": "c1", "why_relevant": "states the height"}],
        "queries_text": [],
        "queries_vector": [],
        "rationale": "the first snippet states the height",
        "coverage_notes": "height stated",
    },
    ensure_ascii=False,
)
QUESTION = "東京タワーの高さは何メートルですか"
JSON_HEADERS = {"content-type": "application/json"}
HITS = [
    {"document_id": f"doc-{i}", "page": i, "snippet": f"東京タワーの高さは333メートル。資料{i}。", "score": 5.0 - i}
    for i in range(5)
]


MODEL_CLIENT_VARIANTS: dict[str, str | None] = {"sdk": None, "direct": "bench.direct_client_variant"}
"""The service as it is (langchain-openai + the OpenAI SDK), or the contrast with a minimal client of its own."""

FAKE_MODELS = {"lean": "tests.fakes.lean_chat_server", "full": "tests.fakes.llm_server"}
"""The fake model servers the benchmark can run: both send the service the same bytes."""

PROVIDERS = ("openai-compatible", "gemini")
"""The service's model path under test: the OpenAI-family client (`LeanChatOpenAI`, the OpenAI SDK), or
`ChatGoogleGenerativeAI` (google-genai), the provider `cloudrun.yaml` deploys. Both ask the same scripted fake;
Gemini's REST API is served by the full fake only."""


def fake_model_for(provider: str, requested: str | None) -> str:
    """The fake server to run: the one asked for, else the lean one where it speaks the provider's API."""
    if provider == "gemini":
        if requested == "lean":
            raise ValueError("the lean fake model speaks only the OpenAI API: use --fake-model full with gemini")
        return "full"
    return requested or "lean"


def start_fake_model(delay_ms: float, kind: str = "lean") -> tuple[subprocess.Popen[bytes], str]:
    """The fake provider in its own process, so it never competes with the service's event loop; and its root URL.

    The lean server (`tests.fakes.lean_chat_server`) sends the service the same bytes as the full fake
    (`tests.fakes.llm_server`, a test checks it) for about 40 % of its CPU (0.13 vs 0.31 ms a step at 256
    sessions), which the service then has.
    """
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            FAKE_MODELS[kind],
            "--port",
            str(port),
            "--delay-ms",
            str(delay_ms),
            "--reply",
            PLAN,
            "--reply-if",
            "[c1]",
            SELECT,
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
            return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("fake model server did not start")


@dataclass
class Window:
    """The measurement window: steps completing inside it count, with their latencies.

    A failed step (non-200, `action: ERROR`, a body that is not JSON, a dropped connection) counts as
    a failure wherever it lands, so "0 failures" covers the warm-up too.
    """

    start: float
    stop: float
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    failures_outside: int = 0

    def record(self, started: float, ok: bool) -> None:
        finished = time.monotonic()
        inside = self.start <= finished <= self.stop
        if inside:
            self.latencies.append(finished - started)
        if not ok:
            if inside:
                self.failures += 1
            else:
                self.failures_outside += 1


async def think(client: aiohttp.ClientSession, body: dict[str, Any]) -> dict[str, Any] | None:
    """One think step; None when it failed in any way (the session then starts over)."""
    try:
        async with client.post("/agent/librarian/think", data=json.dumps(body), headers=JSON_HEADERS) as response:
            answer = await response.json()
            status = response.status
    except (aiohttp.ClientError, ValueError, TimeoutError):
        return None
    if status != 200 or not isinstance(answer, dict) or answer.get("action") == "ERROR":
        return None
    return answer


async def session(client: aiohttp.ClientSession, index: int, window: Window, delay: float) -> None:
    """After `delay`, loop SEARCH → COMPLETE sessions until the window closes."""
    await asyncio.sleep(delay)
    loop = 0
    while time.monotonic() < window.stop:
        loop += 1
        body: dict[str, Any] = {"request_id": f"s{index}-{loop}", "user_query": QUESTION, "subject_id": "bench"}
        for _ in range(3):
            started = time.monotonic()
            answer = await think(client, body)
            window.record(started, answer is not None)
            if answer is None or answer["action"] != "SEARCH" or time.monotonic() >= window.stop:
                break
            round_ = {
                "queries_text": answer["queries_text"],
                "queries_vector": answer["queries_vector"],
                "results": HITS,
            }
            body = {**body, "state": answer["state"], "search_history": [*body.get("search_history", []), round_]}


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds used so far by each party on the machine, read at one instant (None off Linux)."""

    service: float | None
    model: float | None
    load_generator: float
    machine: float | None
    workers: dict[int, float]
    """Each worker process's own CPU (with several workers; the supervisor and its helpers are not in it)."""

    @classmethod
    def now(cls, service_pid: int, model_pid: int) -> CpuReading:
        workers = {pid: cpu_seconds(pid) for pid in worker_pids(service_pid)}
        return cls(
            tree_cpu_seconds(service_pid),
            tree_cpu_seconds(model_pid),
            time.process_time(),
            machine_busy_seconds(),
            {pid: seconds for pid, seconds in workers.items() if seconds is not None},
        )


def cpu_shares(before: CpuReading, after: CpuReading, steps: int, seconds: float) -> dict[str, Any]:
    """Each party's CPU per think step, and the share of the machine's cores it held over the window.

    The service, the fake model and the load generator share this machine's cores (and, on a shared
    machine, so does other work: `other_cores`); `service_cores` is what the service actually got, and
    `service_steps_per_s_per_core` what its CPU per step would allow on each core it had to itself.
    """
    cores = os.cpu_count() or 1

    def used(name: str) -> float | None:
        first, last = getattr(before, name), getattr(after, name)
        return None if first is None or last is None else last - first

    def per_step(name: str) -> float | None:
        seconds_used = used(name)
        return None if seconds_used is None else round(seconds_used / steps * 1000, 2)

    def in_cores(value: float | None) -> float | None:
        return None if value is None else round(value / seconds, 2)

    service, model, machine = used("service"), used("model"), used("machine")
    own = [value for value in (service, model, used("load_generator")) if value is not None]
    return {
        "service_cpu_ms_per_step": per_step("service"),
        "fake_model_cpu_ms_per_step": per_step("model"),
        "load_generator_cpu_ms_per_step": per_step("load_generator"),
        "cores": cores,
        "service_cores": in_cores(service),
        "fake_model_cores": in_cores(model),
        "load_generator_cores": in_cores(used("load_generator")),
        "other_cores": None if machine is None else in_cores(max(0.0, machine - sum(own))),
        "service_steps_per_s_per_core": None if not service else round(steps / service, 1),
        # With several workers: the cores each one used, busiest first (an uneven split caps throughput at the
        # busiest worker's core while the other idles).
        "worker_cores": sorted(
            (
                round((after.workers[pid] - first) / seconds, 2)
                for pid, first in before.workers.items()
                if pid in after.workers
            ),
            reverse=True,
        ),
    }


async def drive(
    base_url: str,
    concurrency: int,
    seconds: float,
    model_s: float,
    warm_up_s: float,
    service_pid: int,
    model_pid: int,
) -> dict[str, Any]:
    """Ramp `concurrency` sessions up over one model latency, warm up, then measure a steady window.

    Sessions start staggered, as users arrive, rather than in one burst that would keep them in
    lockstep. The load generator is aiohttp: httpx's pool checks every idle connection on each
    request, which at hundreds of connections makes the client, not the service, the bottleneck.
    """
    connector = aiohttp.TCPConnector(limit=concurrency, keepalive_timeout=120)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as client:
        begin = time.monotonic() + warm_up_s
        window = Window(start=begin, stop=begin + seconds)
        sessions = [session(client, i, window, i * model_s / concurrency) for i in range(concurrency)]
        runs = asyncio.gather(*sessions)
        await asyncio.sleep(max(0.0, window.start - time.monotonic()))
        before = CpuReading.now(service_pid, model_pid)
        await asyncio.sleep(max(0.0, window.stop - time.monotonic()))
        after = CpuReading.now(service_pid, model_pid)
        await runs
    steps = len(window.latencies)
    if not steps:
        raise RuntimeError(f"no think step completed in the {seconds} s window ({window.failures} failures)")
    latencies = sorted(window.latencies)
    return {
        "think_steps": steps,
        "failures": window.failures,
        "failures_outside_window": window.failures_outside,
        "window_s": seconds,
        "steps_per_s": round(steps / seconds, 1),
        "p50_s": round(statistics.median(latencies), 3),
        "p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 3),
        **cpu_shares(before, after, steps, seconds),
    }


def run(
    concurrency: int,
    model_ms: float,
    seconds: float,
    warm_up_s: float,
    *,
    blocking: bool,
    log_dir: Path,
    workers: int = 1,
    fake_model: str | None = None,
    model_client: str = "sdk",
    provider: str = "openai-compatible",
) -> dict[str, Any]:
    model, model_url = start_fake_model(model_ms, fake_model_for(provider, fake_model))
    env = provider_env(provider, model_url) | {
        "LLM_TIMEOUT_MS": "30000",
        "REQUEST_TIMEOUT_MS": "60000",
        "WEB_CONCURRENCY": str(workers),
    }
    extra = ["--blocking-model"] if blocking else []
    module = "bench.blocking_variant" if blocking else MODEL_CLIENT_VARIANTS[model_client]
    service = start_service(env, log_dir=log_dir, module=module, extra_args=extra)
    try:
        figures = asyncio.run(
            drive(service.base_url, concurrency, seconds, model_ms / 1000, warm_up_s, service.process.pid, model.pid)
        )
    finally:
        service.stop()
        model.terminate()
        model.wait()
    bound = concurrency / (model_ms / 1000)
    figures |= {
        "concurrency": concurrency,
        "workers": workers,
        "bound_steps_per_s": round(bound, 1),
        "ratio_throughput_over_bound": round(figures["steps_per_s"] / bound, 3),
        "ratio_p50_over_model_latency": round(figures["p50_s"] / (model_ms / 1000), 3),
        "ratio_p99_over_model_latency": round(figures["p99_s"] / (model_ms / 1000), 3),
    }
    per_core = figures["service_steps_per_s_per_core"]
    # What the service's CPU per step would allow if it had every core to itself (no harness, no other load).
    figures["ratio_cpu_ceiling_over_bound"] = (
        None if per_core is None else round(per_core * figures["cores"] / bound, 3)
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[80, 256])
    parser.add_argument("--model-ms", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=20, help="length of the measured window")
    parser.add_argument("--warm-up", type=float, default=3, help="seconds of load before the window opens")
    parser.add_argument("--blocking-concurrency", type=int, default=8, help="concurrency of the blocking contrast")
    parser.add_argument(
        "--workers", type=int, default=1, help="service worker processes (WEB_CONCURRENCY) for the measured runs"
    )
    parser.add_argument(
        "--fake-model",
        choices=sorted(FAKE_MODELS),
        default=None,
        help="the fake model server: lean (the default for openai-compatible: less CPU taken from the service) or "
        "the full test fake (the only one for gemini)",
    )
    parser.add_argument(
        "--provider",
        choices=PROVIDERS,
        default="openai-compatible",
        help="the service's model client: the OpenAI family's, or Gemini's (cloudrun.yaml's provider)",
    )
    parser.add_argument(
        "--model-client",
        choices=sorted(MODEL_CLIENT_VARIANTS),
        default="sdk",
        help="sdk: the service as it is; direct: the contrast bench.direct_client_variant (not the service's client)",
    )
    args = parser.parse_args()
    try:
        fake_model = fake_model_for(args.provider, args.fake_model)
    except ValueError as exc:
        parser.error(str(exc))
    if args.provider != "openai-compatible" and args.model_client != "sdk":
        parser.error("--model-client direct replaces the OpenAI-family client: it needs --provider openai-compatible")
    log_dir = PROJECT_ROOT / "bench" / "results" / "logs"
    runs = [
        run(
            c,
            args.model_ms,
            args.seconds,
            args.warm_up,
            blocking=False,
            log_dir=log_dir,
            workers=args.workers,
            fake_model=fake_model,
            model_client=args.model_client,
            provider=args.provider,
        )
        for c in args.concurrency
    ]
    contrast = run(
        args.blocking_concurrency,
        args.model_ms,
        min(args.seconds, 10),
        args.warm_up,
        blocking=True,
        log_dir=log_dir,
        fake_model=fake_model,
        provider=args.provider,
    )
    report = {
        "benchmark": "librarian_concurrency",
        "command": "python -m bench.librarian_concurrency " + " ".join(sys.argv[1:]),
        "model_latency_ms": args.model_ms,
        "fake_model": FAKE_MODELS[fake_model],
        "provider": args.provider,
        "model_client": args.model_client,
        "runs": runs,
        "blocking_contrast": contrast,
        "targets": {"ratio_throughput_over_bound_at_80": ">= 0.9", "ratio_p99_over_model_latency_at_80": "<= 1.3"},
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
    }
    emit(report, None)


if __name__ == "__main__":
    main()
