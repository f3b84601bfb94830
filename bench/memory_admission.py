"""Peak memory per request, and of a whole instance under `containerConcurrency` of the heaviest requests at once.

    python -m bench.memory_admission [--concurrent 80] [--kind NAME] [--skip-single] [--arena-max N ...]
                                     [--output FILE]

Issue 15, Deliver 4. Two measurements, against `python -m librarian_svc` (embedded engine):

1. `single`: for every agent endpoint, the worst request the limits accept (the bodies of `bench.hostile`),
   one at a time on a one-worker server: the worker's peak RSS during the request (VmHWM, reset before it)
   and its growth over the RSS just before. The kind whose request grows the worker most is "the worst kind".
2. `burst`: `--concurrent` requests of the worst kind (or `--kind`) at once against an instance configured as
   `cloudrun.yaml` configures it (its plain `env` values: `WEB_CONCURRENCY`, `REQUEST_TIMEOUT_MS`,
   `WORKER_MEMORY_BUDGET_MB`, `MALLOC_ARENA_MAX`, ...), measured as the instance's memory: the sum of the
   RSS of the supervisor and every process under it (workers, multiprocessing's resource tracker), sampled
   every 20 ms, its peak compared with `cloudrun.yaml`'s memory limit. The same run also sends the same
   burst with the admission budget out of reach (`WORKER_MEMORY_BUDGET_MB` at its maximum: every request
   let in at once, the baseline), and once per `--arena-max` value with that `MALLOC_ARENA_MAX`.

Requests of one burst use distinct playbooks (distinct seeds), so no cache is shared between them. The RSS
sum counts shared library pages once per process, so it is a little above what the container is charged
for those; the kernel's socket buffers of waiting requests are not in it (at most a few hundred KiB each).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.hostile import (
    CASES,
    Case,
    _wait_idle,
    ace_curate_body,
    ace_generate_body,
    ace_reflect_body,
    ace_search_body,
)
from bench.proc_stats import peak_rss_mb, reset_peak_rss, rss_mb, tree, tree_cpu_seconds
from bench.tools import PROJECT_ROOT, BackgroundLoop, emit, free_port, log, machine_info, ratio, server_process

MODULE = "bench.memory_admission"
CLOUDRUN = PROJECT_ROOT / "cloudrun.yaml"
UNBOUNDED_BUDGET_MB = str(1 << 20)
"""`WORKER_MEMORY_BUDGET_MB`'s maximum: every request fits, so none waits (the baseline)."""
NOT_FROM_CLOUDRUN = {"LLM_PROVIDER", "LLM_TIMEOUT_MS", "GOOGLE_CLOUD_PROJECT", "LOG_FORMAT", "LOG_LEVEL"}
"""cloudrun.yaml values that name the production model and logging, not the instance's shape."""
SAMPLE_S = 0.02
JSON = {"content-type": "application/json"}

SEEDED: dict[str, Callable[[int], dict[str, Any]]] = {
    "ace_search": lambda seed: ace_search_body(None, seed),  # type: ignore[arg-type]
    "ace_generate": lambda seed: ace_generate_body(None, seed),  # type: ignore[arg-type]
    "ace_reflect": lambda seed: ace_reflect_body(None, seed),  # type: ignore[arg-type]
    "ace_curate": lambda seed: ace_curate_body(None, seed),  # type: ignore[arg-type]
}
"""Kinds whose bodies take a seed (distinct playbooks); the others send the same worst body every time."""


def cloudrun() -> tuple[dict[str, str], float, int]:
    """cloudrun.yaml's plain env values (those that shape the instance), memory limit in MB, containerConcurrency."""
    service = yaml.safe_load(CLOUDRUN.read_text(encoding="utf-8"))
    spec = service["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env = {
        item["name"]: str(item["value"])
        for item in container.get("env", [])
        if "value" in item and item["name"] not in NOT_FROM_CLOUDRUN
    }
    return env, memory_mb(container["resources"]["limits"]["memory"]), int(spec["containerConcurrency"])


def memory_mb(quantity: str) -> float:
    """A Kubernetes memory quantity (`1Gi`, `1536Mi`, `2G`) in MB (10^6 bytes, as RSS is reported here: MiB)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?", quantity)
    if match is None:
        raise ValueError(f"memory quantity {quantity!r}")
    scale = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "K": 1e3 / 2**20, "M": 1e6 / 2**20, "G": 1e9 / 2**20, None: 2**-20}
    return round(float(match[1]) * scale[match[2]], 1)


class TreeSampler(BackgroundLoop):
    """Sum of VmRSS (MiB) over a process and its descendants, every SAMPLE_S, while the block runs; the peak."""

    interval_s = SAMPLE_S

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.peak = 0.0
        self.peak_per_process: dict[int, float] = {}

    def sample(self) -> tuple[float, dict[int, float]]:
        per = {pid: rss_mb(pid) or 0.0 for pid in tree(self.pid)}
        return sum(per.values()), per

    def poll(self) -> None:
        total, per = self.sample()
        if total > self.peak:
            self.peak, self.peak_per_process = total, per


def single(only: list[str]) -> dict[str, Any]:
    """Each kind's worst accepted request, alone on a fresh one-worker server: peak RSS and growth over the RSS before.

    A fresh server per kind: on a server that already served a large request, the next one reuses the heap the
    allocator kept, and its growth reads as nothing.
    """
    return {case.name: _single(case) for case in CASES if not only or case.name in only}


def _single(case: Case) -> dict[str, Any]:
    port = free_port()
    env = {"PORT": str(port), "WEB_CONCURRENCY": "1", "LOG_LEVEL": "warning"}
    with (
        server_process([sys.executable, "-m", "librarian_svc"], port=port, env=env) as process,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=200.0) as client,
    ):

        def post(path: str, body: Any) -> httpx.Response:
            return client.post(path, json=body)

        body = json.dumps(case.body(post), ensure_ascii=False).encode()  # GRACE walks its session here
        _wait_idle(process.pid)
        before = rss_mb(process.pid) or 0.0
        reset_peak_rss(process.pid)
        answer = client.post(case.path, content=body, headers=JSON)
        peak = peak_rss_mb(process.pid) or 0.0
    result = {
        "path": case.path,
        "body_bytes": len(body),
        "status": answer.status_code,
        "action": answer.json().get("error_type") or answer.json().get("action"),
        "rss_before_mb": before,
        "peak_rss_mb": peak,
        "growth_mb": round(peak - before, 1),
        "growth_per_body_byte": round((peak - before) * 2**20 / len(body), 1),
    }
    log(f"single {case.name}: {json.dumps(result)}")
    return result


def _bodies(kind: str, concurrent: int) -> tuple[str, list[bytes]]:
    case = next(c for c in CASES if c.name == kind)
    if kind in SEEDED:
        bodies = [json.dumps(SEEDED[kind](1_000 + i), ensure_ascii=False).encode() for i in range(concurrent)]
        return case.path, bodies
    raise ValueError(f"--kind {kind}: the burst sends ACE kinds (bodies with distinct playbooks): {sorted(SEEDED)}")


def burst(path: str, bodies: list[bytes], env_extra: dict[str, str], label: str) -> dict[str, Any]:
    """All `bodies` at once against one instance; the instance's peak memory and the answers."""
    port = free_port()
    env = {**env_extra, "PORT": str(port), "LOG_LEVEL": "warning"}
    with server_process([sys.executable, "-m", "librarian_svc"], port=port, env=env, ready_path="/ready") as process:
        base_url = f"http://127.0.0.1:{port}"
        workers = int(env.get("WEB_CONCURRENCY", "1"))
        deadline = time.monotonic() + 120
        while len([p for p in tree(process.pid) if p != process.pid]) < workers and time.monotonic() < deadline:
            time.sleep(0.2)  # the other workers start once the first serves
        _wait_idle(process.pid)
        time.sleep(3.0)
        sampler = TreeSampler(process.pid)
        idle, idle_per = sampler.sample()
        gate = threading.Barrier(len(bodies))

        def send(body: bytes) -> str:
            with httpx.Client(base_url=base_url, timeout=300.0) as client:
                gate.wait()
                answer = client.post(path, content=body, headers=JSON)
                action = answer.json().get("error_type") or answer.json().get("action")
                return f"{answer.status_code} {action}"

        cpu_before = tree_cpu_seconds(process.pid) or 0.0
        started = time.perf_counter()
        with sampler, ThreadPoolExecutor(len(bodies)) as pool:
            statuses = Counter(pool.map(send, bodies))
        wall = time.perf_counter() - started
        cpu = (tree_cpu_seconds(process.pid) or 0.0) - cpu_before
        after, _ = sampler.sample()
    result = {
        "label": label,
        "env": {k: v for k, v in env.items() if k != "PORT"},
        "processes": len(idle_per),
        "idle_mb": round(idle, 1),
        "peak_mb": round(sampler.peak, 1),
        "peak_per_process_mb": sorted(round(v, 1) for v in sampler.peak_per_process.values()),
        "after_mb": round(after, 1),
        "wall_s": round(wall, 2),
        "server_cpu_s": round(cpu, 1),
        "answers": dict(sorted(statuses.items())),
    }
    log(f"burst {label}: {json.dumps(result)}")
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=None, help="default: cloudrun.yaml's containerConcurrency")
    parser.add_argument(
        "--kind", default=None, help=f"the burst's kind (default: the worst of `single`): {sorted(SEEDED)}"
    )
    parser.add_argument("--only", nargs="*", default=[], help="`single` only for these kinds")
    parser.add_argument("--skip-single", action="store_true")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--arena-max", nargs="*", default=[], help="also burst with MALLOC_ARENA_MAX set to each")
    parser.add_argument("--budget", nargs="*", default=[], help="also burst with WORKER_MEMORY_BUDGET_MB set to each")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    env, limit_mb, concurrency = cloudrun()
    concurrent = args.concurrent or concurrency
    singles = {} if args.skip_single else single(args.only)
    worst_of_single = max(
        (name for name in singles if name in SEEDED), key=lambda name: singles[name]["growth_mb"], default=None
    )
    kind = args.kind or worst_of_single or "ace_search"
    path, bodies = _bodies(kind, concurrent)
    runs = [burst(path, bodies, env, "as cloudrun.yaml")]
    if not args.skip_baseline:
        runs.append(burst(path, bodies, {**env, "WORKER_MEMORY_BUDGET_MB": UNBOUNDED_BUDGET_MB}, "no admission"))
    runs += [
        burst(path, bodies, {**env, "MALLOC_ARENA_MAX": value}, f"MALLOC_ARENA_MAX={value}") for value in args.arena_max
    ]
    runs += [
        burst(path, bodies, {**env, "WORKER_MEMORY_BUDGET_MB": value}, f"WORKER_MEMORY_BUDGET_MB={value}")
        for value in args.budget
    ]
    configured, unbounded = runs[0], next((run for run in runs if run["label"] == "no admission"), None)
    emit(
        {
            "benchmark": MODULE,
            "command": f"python -m {MODULE} " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": machine_info(),
            "note": "machine shared with other sessions; memory figures do not depend on the load, wall times do",
            "meets_target_within_limit": configured["peak_mb"] <= limit_mb,
            "ratio_peak_over_limit": ratio(configured["peak_mb"], limit_mb),
            "ratio_peak_with_over_without_admission": ratio(configured["peak_mb"], unbounded["peak_mb"])
            if unbounded
            else None,
            "single_worst_request_per_kind": singles,
            "worst_kind_of_single": worst_of_single,
            "burst": {
                "kind": kind,
                "path": path,
                "concurrent": concurrent,
                "body_bytes": len(bodies[0]),
                "cloudrun_memory_limit_mb": limit_mb,
                "cloudrun_env": env,
                "runs": runs,
                "within_limit": {run["label"]: run["peak_mb"] <= limit_mb for run in runs},
            },
        },
        args.output,
    )


if __name__ == "__main__":
    main()
