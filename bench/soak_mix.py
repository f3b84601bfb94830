"""The operations the soak benchmark mixes: one whole session or call per agent endpoint.

Each operation raises on anything but a contract-valid success, so the soak counts it as an error.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from functools import cache
from pathlib import Path

import httpx

from reference_orchestrator.agent_sessions import run_ace, run_grace
from reference_orchestrator.corpus import Corpus, jsquad_chunks
from reference_orchestrator.loop import run_question

JSQUAD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "jsquad" / "valid-v1.3.json"

Operation = Callable[[httpx.AsyncClient, int, random.Random], Awaitable[None]]


@cache
def _jsquad() -> tuple[Corpus, list[str]]:
    chunks, questions = [], []
    for chunk, qas in jsquad_chunks(JSQUAD):
        chunks.append(chunk)
        questions += [q for _, q in qas]
    return Corpus(chunks), questions


async def librarian_session(client: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """A whole Librarian loop on a question not asked before in this run."""
    corpus, questions = _jsquad()
    question = questions[index % len(questions)]
    result = await run_question(client, corpus, question, request_id=f"soak-{index}", vector=False)
    if result.action != "COMPLETE" and result.final.get("error_type") != "LOOP_LIMIT":
        raise RuntimeError(f"librarian ended with {result.final}")


async def grace_session(client: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """A whole GRACE session (plan → searches → answer) on a fresh question."""
    corpus, questions = _jsquad()
    steps = await run_grace(client, corpus, questions[(index * 7) % len(questions)], request_id=f"soak-g{index}")
    if steps[-1].get("action") != "COMPLETE":
        raise RuntimeError(f"grace ended with {steps[-1]}")


def _playbook(index: int) -> dict[str, object]:
    """A playbook whose content changes with `index`, so the embedding cache keeps seeing new text."""
    return {
        "bullets": [
            {"id": f"gen-{i:05d}", "section": "general", "content": f"ルール{index}-{i}: 結果を確認してから次に進む。"}
            for i in range(1, 21)
        ]
    }


async def ace_turn(client: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """One ACE learning turn (search → generate → reflect → curate) on a playbook not seen before."""
    await run_ace(client, _playbook(index), f"ルール{index}について", "確認する", request_id=f"soak-a{index}")


DASHBOARD = {
    "trays": {
        "todo": [{"id": f"n{i}", "title": f"タスク{i}の準備と確認", "status": "todo"} for i in range(1, 8)],
        "doing": [{"id": "n9", "title": "会場の予約", "status": "doing"}],
    }
}


async def proposal_run(client: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """An Organizer or Advisor run on the same dashboard."""
    kind = "organizer" if index % 2 else "advisor"
    response = await client.post(f"/api/{kind}/run", json={"dashboard": DASHBOARD, "focusNodeId": "n1"})
    if response.status_code != 200 or not response.json().get("ok"):
        raise RuntimeError(f"{kind}: {response.status_code} {response.text[:200]}")


async def health(client: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """Probe traffic, as Cloud Run sends it."""
    response = await client.get("/ready")
    response.raise_for_status()


MIX: list[tuple[str, Operation]] = [
    ("librarian_session", librarian_session),
    ("grace_session", grace_session),
    ("ace_turn", ace_turn),
    ("proposal_run", proposal_run),
    ("librarian_session", librarian_session),
    ("ready", health),
]
