"""Drive one question through the Librarian loop over HTTP, like the Go orchestrator does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from reference_orchestrator.corpus import SearchBackend

THINK_PATH = "/agent/librarian/think"


@dataclass
class LoopResult:
    """How one question ended: the final body, the think calls made and every step's body."""

    final: dict[str, Any]
    calls: int
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def action(self) -> str:
        """SEARCH never ends a loop, so this is COMPLETE or ERROR."""
        return str(self.final.get("action"))


def execute_search(corpus: SearchBackend, action: dict[str, Any], *, k: int, vector: bool) -> dict[str, Any]:
    """Run a SEARCH action's queries and return the round to append to `search_history`."""
    results: list[dict[str, Any]] = []
    for query in action.get("queries_text", []):
        for chunk, score in corpus.text_search(query, k):
            results.append(_hit(chunk, score, "text", query))
    if vector:
        for query in action.get("queries_vector", []):
            for chunk, score in corpus.vector_search(query, k):
                results.append(_hit(chunk, score, "vector", query))
    return {
        "queries_text": action.get("queries_text", []),
        "queries_vector": action.get("queries_vector", []),
        "results": results,
    }


def _hit(chunk: Any, score: float, retrieval: str, query: str) -> dict[str, Any]:
    return {
        "document_id": chunk.document_id,
        "page": chunk.page,
        "chunk_id": chunk.chunk_id,
        "snippet": chunk.text,
        "score": round(score, 6),
        "retrieval": retrieval,
        "metadata": {"query": query},
    }


async def run_question(
    client: httpx.AsyncClient,
    corpus: SearchBackend,
    question: str,
    *,
    request_id: str,
    subject_id: str = "demo",
    k: int = 5,
    vector: bool = True,
    constraints: dict[str, Any] | None = None,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
    max_calls: int = 20,
) -> LoopResult:
    """Call think until COMPLETE or ERROR, executing each SEARCH against the corpus."""
    history: list[dict[str, Any]] = []
    state: Any = None
    steps = []
    for call in range(1, max_calls + 1):
        body = {
            "request_id": f"{request_id}-{call}",
            "user_query": question,
            "subject_id": subject_id,
            "search_history": history,
            "state": state,
        }
        if constraints:
            body["constraints"] = constraints
        # X-Session-Id lets a load balancer (or the scale-out test's rotating transport) see the session.
        response = await client.post(THINK_PATH, json=body, headers={"X-Session-Id": request_id})
        answer = response.json()
        steps.append(answer)
        if on_step:
            on_step(call, answer)
        if answer.get("action") != "SEARCH":
            return LoopResult(final=answer, calls=call, steps=steps)
        history.append(execute_search(corpus, answer, k=k, vector=vector))
        state = answer["state"]
    raise RuntimeError(f"the Librarian asked for more than {max_calls} searches")
