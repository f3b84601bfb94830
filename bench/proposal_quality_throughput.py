"""Organizer / Advisor run throughput on one worker (embedded engine) against the validate endpoint, same dashboard.

Payload: a 200-node dashboard (4 status trays, titles from a fixed vocabulary so terms repeat, ~13 KB)
with a focus node whose title lists three parts. Subjects: `POST /api/organizer/run` and
`POST /api/advisor/run` (decode, flatten the trays, build the report, validate it, render it).
Baseline: `POST /api/proposal-quality/validate` with the same dashboard and a small valid report
(decode, flatten the trays, validate): the cost of receiving such a dashboard at all. The ratios
are run ÷ validate requests/s, the share of the endpoint's ceiling left after generating and
rendering. A second, in-process figure: building and validating the Organizer report of the largest
board the contract accepts (10,000 nodes), against flattening that board, single-threaded.

The service is `python -m librarian_svc` as deployed (one uvicorn worker, embedded engine, JSON logs).

    python -m bench.proposal_quality_throughput [--repeat 2] [--duration 8] [--connections 8]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from bench.tools import WrkSettings, emit, log, ratio, service_label, service_workers, shown_wrk_command
from bench.wrk_compare import Target, arguments, measure, report, running, service, wrk_settings
from contracts.proposal_quality import Dashboard, ProposalRunRequest, ProposalValidateRequest
from graphs.proposal_quality.board import MAX_BOARD_NODES, board_from_dashboard
from graphs.proposal_quality.drafting.organizer import organizer_report
from graphs.proposal_quality.validator import validate_organizer_report

MODULE = "bench.proposal_quality_throughput"
NODES = 200
STATUSES = ("todo", "doing", "review", "done")
SUBJECTS = ("ログイン", "決済", "請求書", "会員登録", "検索", "通知", "管理画面", "帳票", "データ移行", "監視")
ACTIONS = ("設計", "実装", "テスト", "レビュー", "文書化")
PATHS = {"organizer": "/api/organizer/run", "advisor": "/api/advisor/run", "validate": "/api/proposal-quality/validate"}


def dashboard(nodes: int) -> dict[str, Any]:
    """`nodes` nodes over four status trays, deterministic titles; n0 lists three parts."""
    trays: dict[str, list[dict[str, str]]] = {status: [] for status in STATUSES}
    for i in range(nodes):
        status = STATUSES[i % len(STATUSES)]
        title = f"{SUBJECTS[i % len(SUBJECTS)]}の{ACTIONS[(i // len(SUBJECTS)) % len(ACTIONS)]} {i}"
        trays[status].append({"id": f"n{i}", "title": title, "status": status})
    trays["todo"][0]["title"] = "リリース準備、告知文の作成・当日の連絡体制"
    return {"trays": trays}


def payloads() -> dict[str, bytes]:
    """The exact bytes POSTed to each endpoint, checked against the contracts."""
    board = dashboard(NODES)
    run = {"request_id": "bench-pq", "dashboard": board, "focusNodeId": "n0", "userIntent": "進め方を決めたい"}
    report = {
        "decomposition_proposals": [],
        "grouping_proposals": [{"group_label": "ログイン関連", "reason": "同じ機能です。", "node_ids": ["n0", "n10"]}],
        "relation_proposals": [],
        "summary": "まずログイン関連をまとめると見通しが立ちます。",
    }
    validate = {"request_id": "bench-pq", "kind": "organizer", "report": report, "dashboard": board}
    bodies = {"organizer": msgspec.json.encode(run), "advisor": msgspec.json.encode(run)}
    bodies["validate"] = msgspec.json.encode(validate)
    msgspec.json.decode(bodies["organizer"], type=ProposalRunRequest)
    msgspec.json.decode(bodies["validate"], type=ProposalValidateRequest)
    return bodies


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        timings.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(timings), 2)


def largest_board(runs: int = 5) -> dict[str, Any]:
    """In-process: the Organizer report of a 10,000-node board, against flattening that board."""
    parsed = msgspec.convert(dashboard(MAX_BOARD_NODES), Dashboard)
    board = board_from_dashboard(parsed)

    def build_and_validate() -> None:
        report = organizer_report(board, focus_id="n0", intent=None)
        assert validate_organizer_report(report, board.valid_ids).ok

    flatten_ms = _median_ms(lambda: board_from_dashboard(parsed), runs)
    build_ms = _median_ms(build_and_validate, runs)
    return {
        "nodes": MAX_BOARD_NODES,
        "organizer_build_and_validate_ms": build_ms,
        "baseline_flatten_ms": flatten_ms,
        "ratio_build_over_flatten": ratio(build_ms, flatten_ms),
    }


def run(settings: WrkSettings, repeat: int) -> dict[str, Any]:
    bodies = payloads()
    log(f"payload: {NODES} nodes, run body {len(bodies['organizer'])} bytes, validate body {len(bodies['validate'])}")
    server = service("service")
    targets = [Target(name, server.url(path), bodies[name], expect={"ok": True}) for name, path in PATHS.items()]
    with running([server]):
        measured = measure(targets, settings, repeat)
    summary = measured.medians
    validate_rps = summary["validate"]["requests_per_s"]
    return report(
        MODULE,
        "requests/s of the Organizer / Advisor run endpoints (embedded engine, 200-node dashboard), "
        f"{service_workers()} worker(s), against the validate endpoint on the same dashboard",
        server=service_label(),
        payload={
            "nodes": NODES,
            "bytes": {name: len(body) for name, body in bodies.items()},
            "checks": measured.first_response,
        },
        wrk=shown_wrk_command(settings),
        settings=settings.as_dict(),
        repeat=repeat,
        **summary,
        ratio_organizer_over_validate_requests_per_s=ratio(summary["organizer"]["requests_per_s"], validate_rps),
        ratio_advisor_over_validate_requests_per_s=ratio(summary["advisor"]["requests_per_s"], validate_rps),
        largest_board_in_process=largest_board(),
    )


def main(argv: list[str] | None = None) -> None:
    args = arguments(__doc__, repeat=2, duration=8, connections=8, warmup=2).parse_args(argv)
    emit(run(wrk_settings(args), args.repeat), args.output)


if __name__ == "__main__":
    main()
