"""Every response body of a fixed replay set, written to a file: run it before and after a change, then diff.

Not a speed figure: the evidence that a speed change left every outcome as it was. The app runs
in-process (embedded engine, a fixed state key) and is driven the way a caller drives it:

- GRACE: `--sessions` JSQuAD questions (the first ones of valid-v1.3), each stepped to COMPLETE by
  `reference_orchestrator.agent_sessions.run_grace` (SEARCHes answered from the corpus, questions
  with PROCEED), and the throughput benchmark's 40-hit step.
- Proposal quality: the throughput benchmark's three bodies; Organizer and Advisor runs on boards
  with every status category, children and related titles, for every node as the focus and for
  none; the seed's ten sample cases through both run endpoints and validate.

Each state token is replaced by its verified contents without the issue and expiry times (which
differ from run to run), so equal files mean equal bodies and equal next states.

    python -m bench.outcome_replay --bodies before.jsonl
    python -m bench.outcome_replay --bodies after.jsonl && cmp before.jsonl after.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.grace_throughput import HITS
from bench.proposal_quality_throughput import STATUSES, dashboard, payloads
from bench.tools import JSQUAD, emit, log
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.services import Services, build_services
from librarian_svc.settings import load_settings
from reference_orchestrator.agent_sessions import GRACE_STEP, grace_hits, run_grace
from reference_orchestrator.corpus import Corpus, jsquad_chunks

MODULE = "bench.outcome_replay"
REPLAY_KEY = "outcome-replay-key-0123456789abcdef"
RUN_PATHS = {"organizer": "/api/organizer/run", "advisor": "/api/advisor/run"}
VALIDATE_PATH = "/api/proposal-quality/validate"
EXTRA_STATUSES = ("保留", "完了", "進行中", "未着手", "blocked", "review")


def _settled(body: Any, services: Services) -> Any:
    """The body with every state token replaced by its verified contents, minus the clock."""
    if isinstance(body, dict):
        out = {key: _settled(value, services) for key, value in body.items()}
        token = body.get("state")
        if isinstance(token, str):
            contents = services.codec.read(token)
            out["state"] = {"agent": contents.a, "version": contents.v, "data": contents.d}
        return out
    if isinstance(body, list):
        return [_settled(item, services) for item in body]
    return body


def family_board(size: int) -> dict[str, Any]:
    """Nodes over ten trays of every status category, a third of them children, titles sharing terms."""
    trays: dict[str, list[dict[str, Any]]] = {}
    subjects = ("会場の予約", "データ移行", "告知文の作成・当日の連絡体制", "予算の確認", "画面デザインのレビュー")
    statuses = (*STATUSES, *EXTRA_STATUSES)
    for i in range(size):
        status = statuses[i % len(statuses)]
        node: dict[str, Any] = {"id": f"f{i}", "title": f"{subjects[i % len(subjects)]} {i // 3}", "status": status}
        if i % 3 == 2:
            node["parentId"] = f"f{i - 2}"
        trays.setdefault(status, []).append(node)
    return {"trays": trays}


def proposal_bodies() -> list[tuple[str, bytes]]:
    """(path, body) for every proposal-quality request of the replay."""
    from tests.graphs.proposal_quality.samples import ADVISOR_SAMPLES, ORGANIZER_SAMPLES

    bench = payloads()
    requests: list[tuple[str, Any]] = [
        (RUN_PATHS["organizer"], bench["organizer"]),
        (RUN_PATHS["advisor"], bench["advisor"]),
    ]
    requests.append((VALIDATE_PATH, bench["validate"]))
    boards = [family_board(12), family_board(30), dashboard(40)]
    for b, board in enumerate(boards):
        ids = [node["id"] for tray in board["trays"].values() for node in tray]
        for focus in [None, *ids]:
            for kind, path in RUN_PATHS.items():
                run = {"request_id": f"pq-{b}-{kind}-{focus}", "dashboard": board, "focusNodeId": focus}
                if focus is None or focus.endswith("3"):
                    run["userIntent"] = "データ移行を先に進めたい"
                    run["constraints"] = {"notes": ["今週中に終えたい"]}
                requests.append((path, run))
    for sample in [*ORGANIZER_SAMPLES, *ADVISOR_SAMPLES]:
        for kind, path in RUN_PATHS.items():
            run = {"request_id": f"sample-{sample.id}-{kind}", "dashboard": sample.dashboard()}
            if sample.focus is not None:
                run["focusNodeId"] = sample.focus
            if sample.intent is not None:
                run["userIntent"] = sample.intent
            requests.append((path, run))
        report_kind = "organizer" if sample.id.startswith("O") else "advisor"
        validate = {"request_id": f"sample-{sample.id}", "kind": report_kind, "report": sample.report}
        requests.append((VALIDATE_PATH, {**validate, "validNodeIds": sample.valid_ids}))
    return [(path, body if isinstance(body, bytes) else msgspec.json.encode(body)) for path, body in requests]


async def replay(sessions: int) -> list[dict[str, Any]]:
    """Every response of the replay, in order, each as {"case", "status", "body"} with tokens settled."""
    env = {**os.environ, "LLM_PROVIDER": "heuristic", "STATE_SIGNING_KEYS": REPLAY_KEY, "LOG_LEVEL": "WARNING"}
    env.pop("STATE_SIGNING_KEY", None)
    settings = load_settings(env)
    configure_logging("console", "warning", stream=sys.stderr)  # stdout is the report's
    services = build_services(settings)
    app = create_app(settings, services=services)
    pairs = list(jsquad_chunks(JSQUAD))
    corpus = Corpus([chunk for chunk, _ in pairs])
    questions = [question for _, qas in pairs for _, question in qas][:sessions]
    records: list[dict[str, Any]] = []
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]  # see tests/support/asgi.py
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        for i, question in enumerate(questions):
            for n, body in enumerate(await run_grace(client, corpus, question, request_id=f"replay-{i}")):
                records.append({"case": f"grace-{i}-{n}", "status": 200, "body": _settled(body, services)})
        first = (await client.post(GRACE_STEP, json={"request_id": "bench-0", "query": questions[0]})).json()
        hits = [{**hit, "snippet": hit["snippet"][:300]} for hit in grace_hits(corpus, questions[0], HITS)]
        step = {
            "request_id": "bench-1",
            "state": first["state"],
            "tool_result": {"step_id": first["step_id"], "hits": hits},
        }
        answer = await client.post(GRACE_STEP, json=step)
        records.append({"case": "grace-bench", "status": answer.status_code, "body": _settled(answer.json(), services)})
        for n, (path, raw) in enumerate(proposal_bodies()):
            response = await client.post(path, content=raw, headers={"content-type": "application/json"})
            records.append({"case": f"proposal-{n}{path}", "status": response.status_code, "body": response.json()})
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=80, help="GRACE sessions (JSQuAD questions) to replay")
    parser.add_argument("--bodies", type=Path, required=True, help="where to write the bodies, one JSON line each")
    parser.add_argument("--output", type=Path, default=None, help="also write the summary report here")
    args = parser.parse_args(argv)
    records = asyncio.run(replay(args.sessions))
    lines = b"".join(msgspec.json.encode(record) + b"\n" for record in records)
    args.bodies.parent.mkdir(parents=True, exist_ok=True)
    args.bodies.write_bytes(lines)
    log(f"{len(records)} bodies written to {args.bodies}")
    grace = [r for r in records if r["case"].startswith("grace-")]
    emit(
        {
            "benchmark": MODULE,
            "grace_sessions": args.sessions,
            "grace_responses": len(grace),
            "proposal_responses": len(records) - len(grace),
            "non_200": sum(r["status"] != 200 for r in records),
            "sha256": hashlib.sha256(lines).hexdigest(),
            "bodies": str(args.bodies),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
