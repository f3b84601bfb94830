"""Scale-out proof (issue 7 item 2): any instance serves any step, and losing one loses nothing.

Two (and three) real service processes share only their configuration (the same STATE_SIGNING_KEYS, as Cloud
Run revisions do). Every step of every session of all four agents (Librarian loops, GRACE step
loops, ACE learning turns, proposal runs) goes to a different instance than the step before;
then one instance is SIGKILLed mid-run and the sessions continue on the other. Outcomes must equal
those of a single in-process instance (the embedded engine is deterministic).
"""

from __future__ import annotations

import asyncio
import itertools
import signal
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from litestar import Litestar

from reference_orchestrator.agent_sessions import run_ace, run_grace
from reference_orchestrator.corpus import Corpus
from reference_orchestrator.loop import run_question
from reference_orchestrator.rotating_transport import RotatingTransport
from tests.support.asgi import asgi_client
from tests.support.jsquad import JsquadSet
from tests.support.live_service import LiveService

pytestmark = [pytest.mark.live, pytest.mark.slow]

KEY = {"STATE_SIGNING_KEYS": "scale-out-shared-signing-key-0123456789"}
DASHBOARD = {
    "trays": {
        "todo": [{"id": "n1", "title": "告知文の作成と当日の連絡体制", "status": "todo"}],
        "doing": [{"id": "n2", "title": "会場の予約", "status": "doing"}],
    }
}


def _outcome(steps: list[dict[str, Any]]) -> list[Any]:
    """What must not depend on which instance answered: actions, queries, evidence (not request ids or state)."""
    return [
        (s["action"], s.get("queries_text"), s.get("queries_vector"), s.get("evidence"), s.get("error_type"))
        for s in steps
    ]


async def _librarian_sessions(client: httpx.AsyncClient, corpus: Corpus, questions: list[str]) -> list[list[Any]]:
    results = await asyncio.gather(
        *(run_question(client, corpus, q, request_id=f"scale-{i}", vector=True) for i, q in enumerate(questions))
    )
    return [_outcome(r.steps) for r in results]


PLAYBOOK = {
    "bullets": [
        {"id": "gen-00001", "section": "general", "content": "東京タワーの高さは300メートルである。"},
        {"id": "gen-00002", "section": "general", "content": "Always paginate until an API returns an empty page."},
    ]
}


def _grace_outcome(steps: list[dict[str, Any]]) -> list[Any]:
    return [
        (s["action"], s.get("kind"), s.get("query"), s.get("answer"), s.get("sources"), s.get("error_type"))
        for s in steps
    ]


def _ace_outcome(bodies: list[dict[str, Any]]) -> list[Any]:
    search, generate, reflect, curate = bodies
    return [
        [r["bullet"]["id"] for r in search["results"]],
        generate["answer"],
        generate["trajectory"],
        reflect["reflection"],
        curate["deltas"],
        [(b["id"], b["content"], b["helpful"], b["harmful"]) for b in curate["playbook"]["bullets"]],
    ]


async def _grace_and_ace_sessions(client: httpx.AsyncClient, corpus: Corpus, questions: list[str]) -> list[Any]:
    grace = await asyncio.gather(
        *(run_grace(client, corpus, q, request_id=f"grace-{i}") for i, q in enumerate(questions[:6]))
    )
    ace = await asyncio.gather(
        *(run_ace(client, PLAYBOOK, q, "333メートル", request_id=f"ace-{i}") for i, q in enumerate(questions[:4]))
    )
    return [_grace_outcome(s) for s in grace] + [_ace_outcome(b) for b in ace]


async def _proposal_calls(client: httpx.AsyncClient) -> list[Any]:
    outcomes = []
    for path in ("/api/organizer/run", "/api/advisor/run"):
        response = await client.post(path, json={"request_id": "pq", "dashboard": DASHBOARD, "focusNodeId": "n1"})
        body = response.json()
        outcomes.append((response.status_code, body["ok"], body["report"]))
    return outcomes


async def _single_instance(app: Litestar, corpus: Corpus, questions: list[str]) -> tuple[list[Any], list[Any]]:
    async with asgi_client(app, "http://one") as client:
        librarian = await _librarian_sessions(client, corpus, questions)
        others = await _grace_and_ace_sessions(client, corpus, questions) + await _proposal_calls(client)
        return librarian, others


@pytest.mark.parametrize("instance_count", [2, 3])
def test_every_step_on_another_instance_then_one_is_killed(
    app: Litestar, start_live_service: Callable[..., LiveService], jsquad_slice: JsquadSet, instance_count: int
) -> None:
    corpus, questions = jsquad_slice.corpus, [q.text for q in jsquad_slice.questions[::11][:12]]
    expected_librarian, expected_others = asyncio.run(_single_instance(app, corpus, questions))
    instances = [start_live_service(KEY) for _ in range(instance_count)]

    async def rotate() -> tuple[list[Any], list[Any], RotatingTransport]:
        transport = RotatingTransport([i.base_url for i in instances])
        async with httpx.AsyncClient(transport=transport, base_url="http://cluster", timeout=30) as client:
            librarian = await _librarian_sessions(client, corpus, questions)
            others = await _grace_and_ace_sessions(client, corpus, questions) + await _proposal_calls(client)
            return librarian, others, transport

    librarian, others, transport = asyncio.run(rotate())
    grace_runs = expected_others[:6]
    assert all(run[-1][0] == "COMPLETE" for run in grace_runs), grace_runs
    assert librarian == expected_librarian
    assert others == expected_others
    assert {index for _, index in transport.sent_to} == set(range(instance_count))
    by_session: dict[str, list[int]] = {}
    for session, index in transport.sent_to:
        by_session.setdefault(session, []).append(index)
    for session, order in by_session.items():
        if session:
            assert all(a != b for a, b in itertools.pairwise(order)), (session, order)

    async def kill_midway() -> tuple[list[Any], RotatingTransport]:
        transport = RotatingTransport([i.base_url for i in instances])
        async with httpx.AsyncClient(transport=transport, base_url="http://cluster", timeout=30) as client:
            librarian = asyncio.create_task(_librarian_sessions(client, corpus, questions))
            others = asyncio.create_task(_grace_and_ace_sessions(client, corpus, questions))
            while len(transport.sent_to) < len(questions):  # noqa: ASYNC110 - wait until every session has stepped
                await asyncio.sleep(0.01)
            instances[0].process.send_signal(signal.SIGKILL)
            return [await librarian, await others], transport

    after_kill, transport = asyncio.run(kill_midway())
    assert after_kill[0] == expected_librarian, "sessions finish with the same outcome after losing an instance"
    assert after_kill[1] == expected_others[: len(after_kill[1])]
    assert transport.alive == list(range(1, instance_count))
    assert transport.failovers >= 1
