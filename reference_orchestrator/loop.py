"""Drive one question through the Librarian loop over HTTP, like the Go orchestrator does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from contracts.limits import LIBRARIAN
from reference_orchestrator.corpus import Chunk, SearchBackend

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


def execute_search(
    corpus: SearchBackend,
    action: dict[str, Any],
    *,
    k: int,
    vector: bool,
    history: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Run a SEARCH action's queries and return the round to append to `search_history`.

    The round is one the service accepts after `history` (the rounds already sent): each snippet is cut to
    the contract's characters, and the round keeps the best-ranked hits of every query (`fit_round`).
    """
    lists: list[list[dict[str, Any]]] = [
        [_hit(chunk, score, "text", query) for chunk, score in corpus.text_search(query, k)]
        for query in action.get("queries_text", [])
    ]
    if vector:
        lists += [
            [_hit(chunk, score, "vector", query) for chunk, score in corpus.vector_search(query, k)]
            for query in action.get("queries_vector", [])
        ]
    return {
        "queries_text": action.get("queries_text", []),
        "queries_vector": action.get("queries_vector", []),
        "results": fit_round(lists, history),
    }


def fit_round(lists: list[list[dict[str, Any]]], history: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The hits of one round (a ranked list per query) within the contract's limits (`contracts.limits`).

    A round may hold `hits_per_round` hits, and the whole history `hits_total` hits and `snippet_chars_total`
    snippet characters: more is a 422 or 413 that ends the loop. Hits are kept rank by rank across the
    queries (every query's first hit, then every query's second, ...), so each query keeps its best hits and
    none is crowded out by another's long list; the last hit kept may be cut to the characters left. The hits
    kept stay in their lists' order (the service ranks a query's hits by their position in the round).
    """
    hits_left = min(LIBRARIAN.hits_per_round, LIBRARIAN.hits_total - sum(len(r["results"]) for r in history))
    chars_left = LIBRARIAN.snippet_chars_total - sum(len(h["snippet"]) for r in history for h in r["results"])
    kept: set[tuple[int, int]] = set()
    for rank, index in sorted((rank, index) for index, hits in enumerate(lists) for rank in range(len(hits))):
        if hits_left <= 0 or chars_left <= 0:
            break
        hit = lists[index][rank]
        hit["snippet"] = hit["snippet"][:chars_left]
        kept.add((index, rank))
        hits_left -= 1
        chars_left -= len(hit["snippet"])
    return [hit for index, hits in enumerate(lists) for rank, hit in enumerate(hits) if (index, rank) in kept]


def _hit(chunk: Chunk, score: float, retrieval: str, query: str) -> dict[str, Any]:
    """A search hit as the contract has it; a chunk longer than a snippet may be is cut to its first characters."""
    return {
        "document_id": chunk.document_id,
        "page": chunk.page,
        "chunk_id": chunk.chunk_id,
        "snippet": chunk.text[: LIBRARIAN.snippet_chars],
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
        history.append(execute_search(corpus, answer, k=k, vector=vector, history=history))
        state = answer["state"]
    raise RuntimeError(f"the Librarian asked for more than {max_calls} searches")
