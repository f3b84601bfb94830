"""Run every benchmark, one after another: `python -m bench` (or `make bench`); `python -m bench NAME…` for some.

Each benchmark runs in its own interpreter (`python -m bench.<name>`), prints its JSON report, and the
report is written to `bench/results/<name>.json` (gitignored). A closing summary lists each report's
ratios against its in-run baseline. Exit status 1 when any benchmark failed (the others still run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from bench.tools import PROJECT_ROOT, RESULTS_DIR, emit

BENCHMARKS: dict[str, list[str]] = {
    "cold_start": ["bench.cold_start"],
    "framework_overhead": ["bench.framework_overhead"],
    "request_decode": ["bench.request_decode"],
    "librarian_throughput": ["bench.librarian_throughput", "--floor"],
    "librarian_quality": ["bench.librarian_quality", "--sample", "500"],
    "librarian_prompt_size": ["bench.librarian_prompt_size"],
    "near_duplicates_growth": ["bench.near_duplicates_growth"],
    "librarian_concurrency": ["bench.librarian_concurrency"],
    "model_step_cpu": ["bench.model_step_cpu"],
    "proposal_quality_throughput": ["bench.proposal_quality_throughput"],
    "ace_search": ["bench.ace_search"],
    "ace_curate": ["bench.ace_curate"],
    "grace_throughput": ["bench.grace_throughput"],
    "grace_reasoning_growth": ["bench.grace_reasoning_growth"],
    "workers": ["bench.workers", "--runs", "2", "--compare-spawn"],
    "worker_balance": ["bench.worker_balance"],
    "stuck_worker": ["bench.stuck_worker"],
    "fork_server_loss": ["bench.fork_server_loss"],
    "hostile": ["bench.hostile"],
    "memory_admission": ["bench.memory_admission"],
    "slow_body": ["bench.slow_body"],
}


def headline(report: dict[str, Any]) -> list[str]:
    """The figures worth a line in the summary: every ratio and target, or the quality comparison."""
    lines = [f"{key} = {value}" for key, value in report.items() if key.startswith(("ratio_", "meets_target"))]
    librarian, baseline = report.get("librarian"), report.get("baseline_bm25_raw_question")
    if isinstance(librarian, dict) and isinstance(baseline, dict) and "recall" in librarian:
        lines.append(f"librarian recall = {librarian['recall']} vs one-shot BM25 {baseline}")
    return lines


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last top-level JSON object in `text` (a benchmark may log lines to stdout before its report)."""
    decoder = json.JSONDecoder()
    starts = [0] if text.startswith("{") else []
    starts += [i + 1 for i in range(len(text)) if text.startswith("\n{", i)]
    for start in reversed(starts):
        try:
            found, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return None


def run_one(name: str, argv: list[str]) -> dict[str, Any]:
    """Run one benchmark module; return its report (raise on failure)."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-m", *argv], cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{name} exited with status {completed.returncode}")
    report = last_json_object(completed.stdout)
    if report is None:
        raise RuntimeError(f"{name} printed no JSON report")
    report.setdefault("command", " ".join(["python", "-m", *argv]))
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(BENCHMARKS)} (default: all)")
    args = parser.parse_args(argv)
    names: list[str] = args.names or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    summary: dict[str, list[str]] = {}
    failed: list[str] = []
    for name in names:
        print(f"\n=== {name}: python -m {' '.join(BENCHMARKS[name])}", flush=True)
        try:
            report = run_one(name, BENCHMARKS[name])
        except RuntimeError as exc:
            print(f"!!! {exc}", flush=True)
            failed.append(name)
            continue
        emit(report, RESULTS_DIR / f"{name}.json")
        summary[name] = headline(report)
    print("\n=== summary (bench/results/*.json)")
    for name, lines in summary.items():
        print(f"{name}:")
        for line in lines:
            print(f"  {line}")
    for name in failed:
        print(f"{name}: FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
