"""The operations the soak benchmark mixes: one whole session or call per agent endpoint.

Each operation raises on anything but a contract-valid success, so the soak counts it as an error.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from functools import cache
from pathlib import Path

import httpx

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


async def health(client: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """Probe traffic, as Cloud Run sends it."""
    response = await client.get("/ready")
    response.raise_for_status()


MIX: list[tuple[str, Operation]] = [
    ("librarian_session", librarian_session),
    ("librarian_session", librarian_session),
    ("ready", health),
]
