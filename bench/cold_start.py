"""Cold start: process start → first 200 on `/health`, the service as shipped vs an eager-import baseline.

Cloud Run counts this time on every scale-out. The service imports provider SDKs only when that
provider is configured (DESIGN.md §2), so the embedded engine should never pay for them. Baseline:
the same entry point after importing both LangChain provider packages up front, i.e. what start-up
would cost if the SDKs were imported at module level. Like for like: they are imported with the
garbage collector paused, as every import of the service's start-up is (`librarian_svc/startup_gc.py`);
otherwise the pause would be credited to lazy loading. Same environment (embedded engine, JSON logs),
alternating runs after one unmeasured warm-up of each (bytecode cached, files in the page cache).

The report also lists what the shipped start-up path imports (`python -X importtime`): the heaviest
modules by cumulative time with the chain that pulled them in, and self time per top-level package.

    python -m bench.cold_start [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.proc_stats import cpu_seconds
from bench.tools import (
    PROJECT_ROOT,
    child_env,
    command_line,
    emit,
    free_port,
    log,
    machine_info,
    ratio,
    stop_process,
    wait_for_status,
)

MODULE = "bench.cold_start"
TARGET_RATIO = 0.5
EAGER_CODE = """\
from librarian_svc.startup_gc import collector_paused
with collector_paused():
    import langchain_openai, langchain_google_genai
from librarian_svc.__main__ import main
raise SystemExit(main())
"""
VARIANTS: dict[str, list[str]] = {
    "service": ["-m", "librarian_svc"],
    "eager_baseline": ["-c", EAGER_CODE],
}
# Provider SDKs the embedded engine must not load.
PROVIDER_SDKS = ("langchain_openai", "langchain_google_genai", "openai", "google.genai", "google.ai")
OUR_PACKAGES = frozenset({"librarian_svc", "graphs", "contracts"})
# What start-up needs before the first request whatever our own code does: LangGraph (the graphs are
# compiled at start-up so /ready means ready), the web stack, logging and numpy.
FLOOR_MODULES = "langgraph.graph, litestar, uvicorn, structlog, numpy, msgspec, yaml"


def time_to_first_health(
    args: list[str], *, extra_env: dict[str, str] | None = None, stderr: Any = None
) -> tuple[float, float | None]:
    """Wall seconds from spawning `python <args>` to its first 200 on /health, and its CPU seconds by then.

    CPU time (10 ms resolution) hardly moves when other processes compete for the cores; wall time does.
    """
    port = free_port()
    env = child_env({"PORT": str(port), **(extra_env or {})})
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
    )
    try:
        ready = wait_for_status(port, "/health", process, timeout=120.0)
        cpu = cpu_seconds(process.pid)
    finally:
        stop_process(process)
    return ready - started, cpu


@dataclass
class ImportNode:
    """One line of `-X importtime` output, with the imports it triggered."""

    name: str
    self_us: int
    cumulative_us: int
    depth: int
    children: list[ImportNode] = field(default_factory=list)


def parse_importtime(text: str) -> list[ImportNode]:
    """The import tree (roots in import order) from `-X importtime` stderr.

    Lines come in post-order: a module's imports are printed, one level deeper, before the module.
    """
    pending: list[ImportNode] = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, raw_name = line.split(":", 1)[1].split("|", 2)
        name = raw_name.rstrip()
        stripped = name.lstrip(" ")
        depth = (len(name) - len(stripped) - 1) // 2  # one space after "|", then two per level
        node = ImportNode(stripped, int(self_us), int(cumulative_us), depth)
        while pending and pending[-1].depth == depth + 1:
            node.children.insert(0, pending.pop())
        pending.append(node)
    return pending


def walk(nodes: list[ImportNode], chain: tuple[str, ...] = ()) -> list[tuple[ImportNode, tuple[str, ...]]]:
    """Every node with the chain of importers above it."""
    found: list[tuple[ImportNode, tuple[str, ...]]] = []
    for node in nodes:
        found.append((node, chain))
        found += walk(node.children, (*chain, node.name))
    return found


def third_party_entries(nodes: list[tuple[ImportNode, tuple[str, ...]]]) -> Iterator[tuple[int, str, str]]:
    """(cumulative µs, importer, module) for each third-party module one of our modules imports first.

    A third-party module imported at the top level (by the interpreter's entry point, e.g. `uvicorn`
    after `-m`) is listed with the importer `<top level>`.
    """
    for node, chain in nodes:
        ours = node.name.split(".")[0] in OUR_PACKAGES
        if not chain and not ours:
            yield node.cumulative_us, "<top level>", node.name
        if ours:
            for child in node.children:
                if child.name.split(".")[0] not in OUR_PACKAGES:
                    yield child.cumulative_us, node.name, child.name


def analyse_imports(top: int) -> dict[str, Any]:
    """Run the shipped start-up with `-X importtime` until /health answers; summarise what it imported.

    `third_party_entry_points`: for each of our modules (librarian_svc, graphs, contracts), the
    third-party modules it imports first and what they cost cumulatively (their own imports included),
    which says which line of our code pays for which dependency.
    """
    with tempfile.TemporaryFile() as stderr:
        seconds, _ = time_to_first_health(["-X", "importtime", *VARIANTS["service"]], stderr=stderr)
        stderr.seek(0)
        text = stderr.read().decode("utf-8", "replace")
    roots = parse_importtime(text)
    nodes = walk(roots)
    by_package: dict[str, int] = defaultdict(int)
    for node, _ in nodes:
        by_package[node.name.split(".")[0]] += node.self_us
    entries = sorted(third_party_entries(nodes), reverse=True)
    heaviest_self = sorted(nodes, key=lambda item: -item[0].self_us)[:top]
    return {
        "command": "python -X importtime -m librarian_svc  # until the first 200 on /health",
        "seconds_to_health_with_importtime": round(seconds, 3),
        "modules_imported": len(nodes),
        "total_import_ms": round(sum(root.cumulative_us for root in roots) / 1000, 1),
        "third_party_entry_points": [
            {"importer": importer, "module": module, "cumulative_ms": round(us / 1000, 1)}
            for us, importer, module in entries[:top]
        ],
        "heaviest_self_ms": [
            {"module": node.name, "self_ms": round(node.self_us / 1000, 1), "imported_via": " > ".join(chain[-3:])}
            for node, chain in heaviest_self
        ],
        "self_ms_by_top_level_package": {
            name: round(us / 1000, 1) for name, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:top]
        },
        "provider_sdks_imported": sorted({node.name for node, _ in nodes if node.name.startswith(PROVIDER_SDKS)}),
    }


def import_seconds(modules: str, *, collector_paused: bool = False) -> float:
    """Seconds a fresh interpreter takes to import `modules` (comma-separated), measured inside it.

    `collector_paused`: with the cyclic GC off, as the service imports them (`librarian_svc.startup_gc`).
    """
    pause = "import gc; gc.disable(); " if collector_paused else ""
    code = f"{pause}import time; t = time.perf_counter(); import {modules}; print(time.perf_counter() - t)"
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, env=child_env(), capture_output=True, text=True, check=True
    )
    return float(completed.stdout.strip())


def interpreter_seconds() -> float:
    """Wall seconds to spawn `python -c pass` and see it exit: what any Python service pays first."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], cwd=PROJECT_ROOT, env=child_env(), check=True)
    return time.monotonic() - started


def dependency_floor(runs: int, service_s: float, eager_s: float) -> dict[str, Any]:
    """What start-up needs whatever our code does, and what that leaves for the target.

    With F the floor's import time (collector paused, as the service imports), S what the SDKs add
    (eager − service) and O everything else the service does (interpreter start, our modules, the
    graphs, the app, the socket), the ratio is (F + O) / (F + O + S). `best_possible_ratio` is F / (F + S),
    O = 0; `own_budget_for_target_s` is the largest O that still meets the target, T / (1 − T) · S − F;
    compare it with `interpreter_start_s`. `import_median_s` (collector on) is kept for earlier reports.
    """
    floor_s = statistics.median(import_seconds(FLOOR_MODULES) for _ in range(runs))
    paused_s = statistics.median(import_seconds(FLOOR_MODULES, collector_paused=True) for _ in range(runs))
    sdk_s = eager_s - service_s
    return {
        "modules": FLOOR_MODULES,
        "import_median_s": round(floor_s, 3),
        "import_median_gc_paused_s": round(paused_s, 3),
        "sdk_cost_s": round(sdk_s, 3),
        "service_above_floor_s": round(service_s - paused_s, 3),
        "interpreter_start_s": round(statistics.median(interpreter_seconds() for _ in range(runs)), 3),
        "best_possible_ratio": ratio(paused_s, paused_s + sdk_s),
        "own_budget_for_target_s": round(TARGET_RATIO / (1 - TARGET_RATIO) * sdk_s - paused_s, 3),
    }


def run(runs: int, top: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu_samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for name, args in VARIANTS.items():
        log(f"warm-up {name}: {time_to_first_health(args)[0]:.3f}s (not counted)")
    for index in range(runs):
        for name, args in VARIANTS.items():
            seconds, cpu = time_to_first_health(args)
            samples[name].append(round(seconds, 3))
            if cpu is not None:
                cpu_samples[name].append(round(cpu, 3))
            log(f"run {index + 1}/{runs} {name}: {seconds:.3f}s (cpu {cpu}s)")
    medians = {name: round(statistics.median(values), 3) for name, values in samples.items()}
    cpu_medians = {name: round(statistics.median(v), 3) for name, v in cpu_samples.items() if v}
    service_over_eager = ratio(medians["service"], medians["eager_baseline"])
    log("import analysis (-X importtime)")
    return {
        "benchmark": "cold_start",
        "question": "seconds from process start to the first 200 on /health",
        "command": command_line(MODULE, sys.argv[1:]),
        "environment": "LLM_PROVIDER=heuristic LOG_FORMAT=json LOG_LEVEL=info HOST=127.0.0.1 PORT=<free>",
        "variants": {
            "service": "python -m librarian_svc",
            "eager_baseline": f'python -c "{EAGER_CODE}"',
        },
        "runs": runs,
        "median_s": medians,
        "samples_s": samples,
        "ratio_service_over_eager": service_over_eager,
        "cpu_median_s": cpu_medians,
        "cpu_samples_s": cpu_samples,
        "ratio_service_over_eager_cpu": (
            ratio(cpu_medians["service"], cpu_medians["eager_baseline"]) if len(cpu_medians) == 2 else None
        ),
        "target_ratio": TARGET_RATIO,
        "meets_target": service_over_eager is not None and service_over_eager <= TARGET_RATIO,
        "imports": analyse_imports(top),
        "dependency_floor": dependency_floor(runs, medians["service"], medians["eager_baseline"]),
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="measured runs per variant (median reported)")
    parser.add_argument("--top", type=int, default=15, help="modules/packages listed in the import analysis")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    emit(run(args.runs, args.top), args.output)


if __name__ == "__main__":
    main()
