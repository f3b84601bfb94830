"""Subject against baseline under wrk, in one run: what the HTTP throughput benchmarks share.

A benchmark names its servers (`service`, `echo_server`), the targets to load (URL, the exact body,
what the first answer must say) and its report fields. `running` starts the servers; `measure`
checks one request per target, loads the targets in alternating wrk rounds (A B A B …, so drift on
the machine hits all alike), keeps each target's median round and, when asked, runs the subject once
more on a single connection (its p50 is the service time without queueing). `ratios` turns the medians into
the report's `ratio_<subject>_over_<baseline>_<metric>` keys; `arguments` is the shared command line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.echo_servers import ECHO_PATH
from bench.tools import (
    PROJECT_ROOT,
    WrkResult,
    WrkSettings,
    command_line,
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

RATIO_METRICS = {"requests_per_s": "requests_per_s", "p50": "p50_ms", "p99": "p99_ms"}
"""Ratio key suffix → the median summary's field."""


@dataclass(frozen=True)
class Server:
    """A server subprocess: its command, port and environment, and what says it is ready."""

    name: str
    argv: tuple[str, ...]
    port: int
    env: Mapping[str, str] = field(default_factory=dict)
    ready_path: str = "/health"
    any_status: bool = False
    cwd: Path = PROJECT_ROOT
    """Where it runs: its tree's `config/` and `prompts/` are found from there (`bench.versus_tree` runs another)."""

    def url(self, path: str) -> str:
        """`path` on this server."""
        return f"http://127.0.0.1:{self.port}{path}"


def service(name: str, module: str = "librarian_svc") -> Server:
    """`python -m librarian_svc` as deployed (one uvicorn worker, embedded engine, JSON logs) on a free port.

    `module`: a variant of the service run the same way (`bench.thinking_floor_variant`).
    """
    port = free_port()
    return Server(name, (sys.executable, "-m", module), port, env={"PORT": str(port)})


def echo_server(name: str, body: str, variant: str = "bare", env: Mapping[str, str] | None = None) -> Server:
    """`python -m bench.echo_servers VARIANT --body BODY` on a free port (the bare app has no /health)."""
    port = free_port()
    argv = (sys.executable, "-m", "bench.echo_servers", variant, "--body", body, "--port", str(port))
    bare = variant == "bare"
    return Server(name, argv, port, dict(env or {}), ready_path=ECHO_PATH if bare else "/health", any_status=bare)


@dataclass(frozen=True)
class Target:
    """One endpoint under load: where, the exact JSON bytes POSTed to it, and what its first answer must say."""

    name: str
    url: str
    body: bytes
    expect: Mapping[str, Any] = field(default_factory=dict)
    server_pid: int | None = None
    """The serving process, when the report should say its CPU per request (`WrkResult.server_cpu_ms_per_request`)."""


@dataclass(frozen=True)
class Comparison:
    """What `measure` measured: the checked first answers, each target's median round, the one-connection run."""

    first_response: dict[str, dict[str, Any]]
    medians: dict[str, dict[str, Any]]
    one_connection: dict[str, Any] | None = None


@contextmanager
def running(servers: Sequence[Server]) -> Iterator[dict[str, int]]:
    """The servers started and ready for the block, stopped after it (wrk is found first, to fail early).

    Yields each server's process id by its name.
    """
    ensure_wrk()
    pids: dict[str, int] = {}
    with ExitStack() as stack:
        for server in servers:
            pids[server.name] = stack.enter_context(
                server_process(
                    server.argv,
                    port=server.port,
                    ready_path=server.ready_path,
                    any_status=server.any_status,
                    env=server.env,
                    cwd=server.cwd,
                )
            ).pid
        log("servers up: " + ", ".join(f"{server.name} on {server.port}" for server in servers))
        yield pids


def measure(
    targets: Sequence[Target], settings: WrkSettings, repeat: int, *, one_connection: str | None = None
) -> Comparison:
    """Check each target's first answer, load them in alternating rounds, keep each one's median round.

    `one_connection` names the target to run once more with `-c1`, without warm-up, for 5 s.
    """
    wrk = ensure_wrk()
    checks = {target.name: first_response(target) for target in targets}
    runs = measure_alternating(wrk, targets, settings, repeat)
    serial = None
    if one_connection is not None:
        (subject,) = (target for target in targets if target.name == one_connection)
        serial = single_connection(wrk, subject, settings)
    return Comparison(checks, {name: summarize(results) for name, results in runs.items()}, serial)


def first_response(target: Target) -> dict[str, Any]:
    """One request before the load: a 200 whose body has `target.expect`; its status, size and those fields."""
    response = httpx.post(target.url, content=target.body, headers={"Content-Type": "application/json"}, timeout=30)
    answer = response.json() if response.status_code == 200 else {}
    got = {key: answer.get(key) for key in target.expect}
    if response.status_code != 200 or got != dict(target.expect):
        raise RuntimeError(
            f"{target.name} answered {response.status_code}: {response.text[:500]}; expected {target.expect}"
        )
    return {"status": response.status_code, **got, "response_bytes": len(response.content)}


def measure_alternating(
    wrk: str, targets: Sequence[Target], settings: WrkSettings, repeat: int
) -> dict[str, list[WrkResult]]:
    """Load each target in turn, `repeat` rounds (A B A B …), so drift on the machine hits both alike.

    Each target is warmed up (unmeasured) before its first round only.
    """
    results: dict[str, list[WrkResult]] = {t.name: [] for t in targets}
    for round_index in range(repeat):
        for target in targets:
            with post_script(target.body) as script:
                first = round_index == 0
                result = run_wrk(wrk, target.url, script, settings, warmup=first, server_pid=target.server_pid)
            log(
                f"round {round_index + 1}/{repeat} {target.name}: {result.requests_per_s} req/s "
                f"p50 {result.p50_ms} ms p99 {result.p99_ms} ms"
            )
            results[target.name].append(result)
    return results


def single_connection(wrk: str, target: Target, settings: WrkSettings) -> dict[str, Any]:
    """`target` alone on one connection for 5 s: its p50 is the service time of one request without queueing."""
    serial_settings = WrkSettings(threads=1, connections=1, duration_s=5, warmup_s=0, timeout_s=settings.timeout_s)
    with post_script(target.body) as script:
        serial = run_wrk(wrk, target.url, script, serial_settings, warmup=False)
    log(f"{target.name}, one connection: {serial.requests_per_s} req/s p50 {serial.p50_ms} ms")
    return {
        "wrk": shown_wrk_command(serial_settings),
        "requests_per_s": serial.requests_per_s,
        "p50_ms": serial.p50_ms,
        "p99_ms": serial.p99_ms,
    }


def summarize(runs: Sequence[WrkResult]) -> dict[str, Any]:
    """The median run by throughput (its latencies with it) plus every run's req/s."""
    ordered = sorted(runs, key=lambda r: r.requests_per_s)
    median = ordered[(len(ordered) - 1) // 2]
    return {
        "requests_per_s": median.requests_per_s,
        "p50_ms": median.p50_ms,
        "p99_ms": median.p99_ms,
        "mean_ms": median.mean_ms,
        "max_ms": median.max_ms,
        "requests": median.requests,
        "all_runs_requests_per_s": [r.requests_per_s for r in runs],
        **_server_cpu(runs),
    }


def paired_ratios(base_runs: Sequence[float], subject_runs: Sequence[float]) -> list[float | None]:
    """Each round's subject figure ÷ the base's in the same round (`measure_alternating` runs them back to back).

    A ratio of the two medians can take its numerator and denominator from rounds far apart; on a VM whose
    speed drifts between spells, the rounds run one after the other are the fairest pairs.
    """
    if len(base_runs) != len(subject_runs):
        raise ValueError(f"{len(base_runs)} base rounds against {len(subject_runs)}: rounds pair one to one")
    return [ratio(subject, base) for base, subject in zip(base_runs, subject_runs, strict=False)]


def median_ratio(ratios: Sequence[float | None]) -> float | None:
    """The median of the rounds' ratios (None when a round had no baseline); of an even number, the lower middle one.

    The lower middle, as `summarize` takes the lower middle round, so that with `--repeat 2` both figures are one
    round's own rather than one a mean.
    """
    known = [r for r in ratios if r is not None]
    return statistics.median_low(known) if known and len(known) == len(ratios) else None


def _server_cpu(runs: Sequence[WrkResult]) -> dict[str, Any]:
    """The server's median CPU per request over the rounds, and every round's, when the rounds measured it."""
    figures = [r.server_cpu_ms_per_request for r in runs if r.server_cpu_ms_per_request is not None]
    if len(figures) != len(runs):
        return {}
    return {"server_cpu_ms_per_request": statistics.median(figures), "all_runs_server_cpu_ms_per_request": figures}


def ratios(
    medians: Mapping[str, Mapping[str, Any]],
    subject: str,
    baseline: str,
    metrics: Sequence[str] = ("requests_per_s", "p50", "p99"),
) -> dict[str, float | None]:
    """`ratio_<subject>_over_<baseline>_<metric>`: subject ÷ baseline for each metric of `RATIO_METRICS`."""
    return {
        f"ratio_{subject}_over_{baseline}_{metric}": ratio(
            medians[subject][RATIO_METRICS[metric]], medians[baseline][RATIO_METRICS[metric]]
        )
        for metric in metrics
    }


def against_echo(subject: str, measured: Comparison) -> dict[str, Any]:
    """Report fields for `subject` loaded against the target `echo`: both medians, the ratios, the `-c1` run."""
    return {
        subject: measured.medians[subject],
        "echo_baseline": measured.medians["echo"],
        **ratios(measured.medians, subject, "echo"),
        f"{subject}_one_connection": measured.one_connection,
    }


def wrk_report(settings: WrkSettings, repeat: int) -> dict[str, Any]:
    """The report's `wrk` entry: the settings, the rounds and the command a reader would type."""
    return {**settings.as_dict(), "repeat": repeat, "command": shown_wrk_command(settings)}


def report(module: str, question: str, **fields: Any) -> dict[str, Any]:
    """A report: which benchmark, what it asks, how to rerun it, its figures, and the machine."""
    return {
        "benchmark": module.rsplit(".", 1)[-1],
        "question": question,
        "command": command_line(module, sys.argv[1:]),
        **fields,
        "machine": machine_info(),
    }


def arguments(
    doc: str | None, *, repeat: int, duration: int, connections: int, warmup: int = 3
) -> argparse.ArgumentParser:
    """The options every throughput benchmark takes, with its defaults; add its own, then `wrk_settings`."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=repeat, help="alternating measured rounds per target")
    parser.add_argument("--duration", type=int, default=duration, help="seconds per measured round")
    parser.add_argument(
        "--warmup", type=int, default=warmup, help="unmeasured seconds before each target's first round"
    )
    parser.add_argument("--connections", type=int, default=connections)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report here")
    return parser


def wrk_settings(args: argparse.Namespace) -> WrkSettings:
    """The wrk settings `arguments` parsed."""
    return WrkSettings(
        threads=args.threads, connections=args.connections, duration_s=args.duration, warmup_s=args.warmup
    )
