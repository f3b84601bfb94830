"""Soak (issue 7 item 6): mixed traffic at a fixed rate for minutes; errors, memory and descriptors over time.

One service process (embedded engine) receives a fixed request rate drawn round-robin from a mix
of every agent's endpoints (whole Librarian loops with fresh, never-repeated questions so caches
keep seeing new content, plus the other agents' calls). Sampled every `--sample-s` seconds from
/proc: resident memory (VmRSS) and open file descriptors. Reported after a warm-up: RSS growth
(target ≤ 10 %), descriptor growth (target 0), error count (target 0), latency percentiles; and
the cache bounds the service runs with.

    python -m bench.soak [--minutes 10] [--rate 40] [--warmup-s 180]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import time
from typing import Any

import httpx

from bench.proc_stats import open_fds, status_kib
from bench.soak_mix import MIX, Operation
from bench.tools import PROJECT_ROOT, emit
from graphs.ace.search.index import MAX_CACHED_INDEXES, MAX_CACHED_ROWS
from graphs.embeddings.hashing import _token_features
from librarian_svc.settings import ENV_DEFAULTS
from tests.support.live_service import start_service

HASH_CACHE_SIZE = _token_features.cache_info().maxsize


def proc_sample(pid: int, started: float) -> dict[str, Any]:
    """The process's resident set (KiB) and open descriptors, `t_s` seconds into the run."""
    return {"t_s": round(time.monotonic() - started, 1), "rss_kib": status_kib(pid, "VmRSS"), "fds": open_fds(pid)}


async def drive(
    base_url: str, pid: int, *, seconds: float, rate: float, sample_s: float
) -> tuple[list[dict[str, Any]], list[float], dict[str, int], list[str]]:
    """Issue `rate` operations per second for `seconds`; sample the process meanwhile."""
    samples: list[dict[str, Any]] = []
    latencies: list[float] = []
    counts: dict[str, int] = {}
    errors: list[str] = []
    rng = random.Random(11)
    started = time.monotonic()
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:

        async def one(index: int, operation: Operation) -> None:
            t0 = time.monotonic()
            try:
                await operation(client, index, rng)
            except Exception as exc:
                errors.append(f"{operation.__name__}: {exc!r}"[:300])
            latencies.append(time.monotonic() - t0)

        async def sampler() -> None:
            while time.monotonic() - started < seconds:
                samples.append(proc_sample(pid, started))
                await asyncio.sleep(sample_s)

        sampling = asyncio.create_task(sampler())
        tasks: set[asyncio.Task[None]] = set()
        index = 0
        while (elapsed := time.monotonic() - started) < seconds:
            name, operation = MIX[index % len(MIX)]
            counts[name] = counts.get(name, 0) + 1
            task = asyncio.create_task(one(index, operation))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            index += 1
            await asyncio.sleep(max(0.0, index / rate - elapsed))
        await asyncio.gather(*tasks)
        await sampling
    samples.append(proc_sample(pid, started))
    return samples, latencies, counts, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=float, default=40, help="operations started per second")
    # Warm-up ends when the bounded caches are full: at 40 operations/s the embedding cache (20,000
    # vectors) fills in about two minutes, and memory growth before that is the caches, not a leak.
    parser.add_argument("--warmup-s", type=float, default=180)
    parser.add_argument("--sample-s", type=float, default=5)
    args = parser.parse_args()
    service = start_service({"LOG_LEVEL": "warning"}, log_dir=PROJECT_ROOT / "bench" / "results" / "logs")
    try:
        samples, latencies, counts, errors = asyncio.run(
            drive(
                service.base_url, service.process.pid, seconds=args.minutes * 60, rate=args.rate, sample_s=args.sample_s
            )
        )
    finally:
        service.stop()
    after_warmup = [s for s in samples if s["t_s"] >= args.warmup_s] or samples
    base, last = after_warmup[0], samples[-1]
    peak = max(s["rss_kib"] for s in after_warmup)
    latencies.sort()
    report = {
        "benchmark": "soak",
        "command": "python -m bench.soak " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
        "operations": sum(counts.values()),
        "operations_by_kind": counts,
        "errors": len(errors),
        "error_examples": errors[:5],
        "latency_p50_s": round(statistics.median(latencies), 4) if latencies else None,
        "latency_p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 4) if latencies else None,
        "rss_after_warmup_kib": base["rss_kib"],
        "rss_end_kib": last["rss_kib"],
        "rss_peak_after_warmup_kib": peak,
        "ratio_rss_growth_after_warmup": round((last["rss_kib"] - base["rss_kib"]) / base["rss_kib"], 4),
        "ratio_rss_peak_over_warmup": round(peak / base["rss_kib"], 4),
        "fds_after_warmup": base["fds"],
        "fds_end": last["fds"],
        "targets": {"errors": 0, "ratio_rss_growth_after_warmup": "<= 0.10", "fd_growth": 0},
        "cache_bounds": {
            "embedding vectors (EMBEDDING_CACHE_SIZE, LRU)": int(ENV_DEFAULTS["EMBEDDING_CACHE_SIZE"]),
            "ACE search-index rows (LRU)": MAX_CACHED_ROWS,
            "ACE search indexes (LRU)": MAX_CACHED_INDEXES,
            "hashing-embedder token features (lru_cache)": HASH_CACHE_SIZE,
        },
        "samples": samples,
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version()},
    }
    emit(report, None)


if __name__ == "__main__":
    main()
