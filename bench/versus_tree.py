"""This tree against an earlier one, endpoint by endpoint, in one run: how many times faster is each step now?

The throughput benchmarks divide by a baseline endpoint of the same tree (a bare echo, `validate`), which
cancels the machine's speed but moves when the baseline itself gets faster (issue 14's proposal ratios
fell when `validate` became 1.8× faster). This measures the question "× faster than then" directly: the
service of `--base` (a commit, extracted with `git archive` into a temporary directory and run with this
tree's interpreter and packages) and the service of this tree, one uvicorn worker each, the embedded
engine, JSON logs, POSTed the same request bodies in alternating wrk rounds (base, this, base, this, …).
The bodies are the throughput benchmarks' own: the Librarian's 3 × 100-hit first call
(`bench.librarian_throughput`), the GRACE step that scores 40 hits (`bench.grace_throughput`; its state is
asked of each server, since each signs its own), and the Organizer, Advisor and validate calls on the
200-node dashboard (`bench.proposal_quality_throughput`). An endpoint the base does not answer as this tree
does (an older contract) is reported with the base's answer and left out.

`speedup_<endpoint>` = this tree's requests/s ÷ the base's. `cpu_per_request_ratio_<endpoint>` = the base server's
CPU per request ÷ this tree's (each server's process and children, read from /proc around every measured round;
the median round of each): the same question asked of what a request costs the server, which the load generator
and other work on a shared machine move less than they move requests/s. `paired_speedup_<endpoint>` = the median
of the rounds' own ratios (`round_speedups`: each round's this ÷ the base round run just before it): this VM's
speed drifts between spells within a run (the base's rounds of one GRACE run: 145, 196, 150 req/s), and a ratio
of medians can divide by a round from another spell. Issue 14 was filed against `f0c2b57`.

    python -m bench.versus_tree --base f0c2b57 [--only librarian advisor] [--repeat 2] [--duration 8]
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench import grace_throughput, librarian_throughput
from bench import proposal_quality_throughput as proposals
from bench.tools import PROJECT_ROOT, WrkSettings, emit, free_port, log, ratio
from bench.wrk_compare import (
    Server,
    Target,
    arguments,
    first_response,
    measure,
    median_ratio,
    paired_ratios,
    report,
    running,
    wrk_report,
    wrk_settings,
)

MODULE = "bench.versus_tree"
ENDPOINTS = ("librarian", "grace", "organizer", "advisor", "validate")
"""What can be compared, in the order measured."""


def tree_service(name: str, root: Path) -> Server:
    """`python -m librarian_svc` from the tree at `root` (its code, config and prompts) on a free port."""
    port = free_port()
    return Server(
        name, (sys.executable, "-m", "librarian_svc"), port, env={"PORT": str(port), "PYTHONPATH": str(root)}, cwd=root
    )


def git(*args: str) -> str:
    """The output of one git command in this checkout (raises when it fails)."""
    return subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True).stdout


@contextmanager
def extracted(revision: str) -> Iterator[tuple[Path, str]]:
    """The tree of `revision` in a temporary directory (`git archive`), and its full commit id."""
    commit = git("rev-parse", "--verify", f"{revision}^{{commit}}").strip()
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        archive = Path(tmp) / "tree.tar"
        git("archive", "--output", str(archive), commit)
        root = Path(tmp) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
        yield root, commit


Body = Callable[[Server], bytes]
"""An endpoint's request body, given the server it is for (GRACE's state comes from that server)."""


def bodies() -> dict[str, tuple[str, Body, dict[str, Any]]]:
    """Each endpoint's path, body and what a 200 answer must say (the throughput benchmarks' own requests).

    Bodies are built when asked for, so `--only` builds no other.
    """

    def librarian(_server: Server) -> bytes:
        return librarian_throughput.build_payload()[0]

    def grace(server: Server) -> bytes:  # the state is the server's own, in its tree's contract
        return grace_throughput.build_payload(server.url(""), 0, 300, this_contract=server.name == "this")[0]

    run_bodies = cache(proposals.payloads)  # one dashboard for the three proposal endpoints

    def run_body(name: str) -> Body:
        return lambda _server: run_bodies()[name]

    return {
        "librarian": (librarian_throughput.THINK_PATH, librarian, {"action": "COMPLETE"}),
        "grace": (grace_throughput.STEP_PATH, grace, {"action": "COMPLETE"}),
        **{name: (path, run_body(name), {"ok": True}) for name, path in proposals.PATHS.items()},
    }


def this_tree() -> dict[str, Any]:
    """This tree's commit and whether its working tree differs from it (what "this" measured)."""
    return {"commit": git("rev-parse", "HEAD").strip(), "uncommitted_changes": bool(git("status", "--porcelain"))}


REFUSALS = (msgspec.ValidationError, ValueError, KeyError, RuntimeError, httpx.HTTPError)
"""How an older tree shows it does not take this tree's requests: a refused contract, another answer, no answer."""


def base_target(
    name: str, base: Server, path: str, body_for: Body, expect: dict[str, Any], pid: int | None = None
) -> Target | str:
    """The base's target for an endpoint, or why the base cannot be compared there (it is then left out).

    `pid`: the base server's process, whose CPU per request the rounds then read.
    """
    try:
        target = Target(f"{name}_base", base.url(path), body_for(base), expect, server_pid=pid)
    except REFUSALS as refused:
        return f"no request of this tree's contract could be built: {refused}"
    return answered_alike(target) or target


def answered_alike(target: Target) -> str | None:
    """None when `target` answers its body with a 200 that says what `target.expect` says; else what it answered."""
    try:
        first_response(target)
    except REFUSALS as problem:
        return str(problem)
    return None


def run(base_revision: str, only: list[str], settings: WrkSettings, repeat: int) -> dict[str, Any]:
    wanted = {name: spec for name, spec in bodies().items() if name in only}
    with extracted(base_revision) as (base_root, commit):
        base, this = tree_service("base", base_root), tree_service("this", PROJECT_ROOT)
        results: dict[str, Any] = {}
        skipped: dict[str, str] = {}
        with running([base, this]) as pids:
            for name, (path, body_for, expect) in wanted.items():
                then_target = base_target(name, base, path, body_for, expect, pids[base.name])
                if isinstance(then_target, str):
                    log(f"{name}: the base does not answer as this tree does, left out: {then_target}")
                    skipped[name] = then_target
                    continue
                this_target = Target(f"{name}_this", this.url(path), body_for(this), expect, server_pid=pids[this.name])
                measured = measure([then_target, this_target], settings, repeat)
                then, now = measured.medians[then_target.name], measured.medians[this_target.name]
                results[name] = {
                    "base": then,
                    "this": now,
                    "bytes": {"base": len(then_target.body), "this": len(this_target.body)},
                }
                results[f"speedup_{name}"] = ratio(now["requests_per_s"], then["requests_per_s"])
                rounds = paired_ratios(then["all_runs_requests_per_s"], now["all_runs_requests_per_s"])
                results[name]["round_speedups"] = rounds
                results[f"paired_speedup_{name}"] = median_ratio(rounds)
                if "server_cpu_ms_per_request" in now and "server_cpu_ms_per_request" in then:
                    cpu_ratio = ratio(then["server_cpu_ms_per_request"], now["server_cpu_ms_per_request"])
                    results[f"cpu_per_request_ratio_{name}"] = cpu_ratio
                log(f"{name}: {now['requests_per_s']} vs {then['requests_per_s']} req/s")
    return report(
        MODULE,
        "requests/s of each endpoint on this tree ÷ on an earlier tree, same bodies, alternating rounds, one worker",
        base={"revision": base_revision, "commit": commit},
        this=this_tree(),
        servers="python -m librarian_svc  # LLM_PROVIDER=heuristic LOG_FORMAT=json, 1 uvicorn worker, each tree",
        wrk=wrk_report(settings, repeat),
        left_out=skipped,
        **results,
    )


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__, repeat=2, duration=8, connections=8)
    parser.add_argument("--base", required=True, help="the earlier tree: a commit, tag or branch")
    parser.add_argument("--only", nargs="+", choices=ENDPOINTS, default=list(ENDPOINTS))
    args = parser.parse_args(argv)
    emit(run(args.base, args.only, wrk_settings(args), args.repeat), args.output)


if __name__ == "__main__":
    main()
