"""Drive one question through the Librarian loop over HTTP, like the Go orchestrator does."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from contracts.limits import LIBRARIAN
from reference_orchestrator.corpus import Chunk, SearchBackend

THINK_PATH = "/agent/librarian/think"
RETRIED_ERROR_TYPES = frozenset({"TIMEOUT", "MODEL_FAILURE"})
"""200 ERROR answers that carry the request's `state`: the README's answer is to send the same request again."""
RETRIES = 2
"""How often one step is sent again after a failure a retry may cure (as the Go loop's `MaxRetries`)."""
RETRY_DELAY_S = 0.2
"""The wait before a step's first retry; it doubles for each further one (as the Go loop's `RetryDelay`)."""
RETRY_AFTER_CAP_S = 10.0
"""The longest `Retry-After` a retry waits for (as the Go loop's `MaxRetryAfter`); a longer one is cut to it."""
BODY_START_CHARS = 200
"""How much of a body that is no Librarian answer (a proxy's error page) a `ServiceError` quotes."""
SENTENCE_TAIL_CHARS = 2_000
"""How far before the limit of one snippet a chunk's last sentence end is looked for (`cut_snippet`)."""
SENTENCE_END = re.compile(r"[。！？\n]|[.．!?](?!\d|[A-Za-z])")
"""A sentence end: 。！？ or a newline; . ． ! ? unless a digit or a Latin letter follows (`3.14`, `example.com`)."""


class ServiceError(RuntimeError):
    """An answer that is no Librarian action: not JSON (a proxy's 502 page), or JSON without an `action`."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.retry_after = retry_after_s(response)
        self.content_type = response.headers.get("content-type", "no content type")
        self.body_start = response.text[:BODY_START_CHARS]
        super().__init__(f"{THINK_PATH} answered HTTP {self.status_code} {self.content_type}: {self.body_start!r}")


@dataclass
class LoopResult:
    """How one question ended: the final body, the think calls made (retries too) and every answer's body."""

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

    The round is one the service accepts after `history` (the rounds already sent): a chunk longer than a
    snippet's limit is cut at a sentence end (`cut_snippet`), and the round keeps the best-ranked hits of every
    query that fit (`fit_round`).
    Without `vector` its `queries_vector` is empty: the round reports the searches that ran, and a query
    reported with no hit would tell the Librarian it was tried and found nothing.
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
        "queries_vector": action.get("queries_vector", []) if vector else [],
        "results": fit_round(lists, history),
    }


def fit_round(lists: list[list[dict[str, Any]]], history: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The hits of one round (a ranked list per query) within the contract's limits (`contracts.limits`).

    A round may hold `hits_per_round` hits, and the whole history `hits_total` hits and `snippet_chars_total`
    snippet characters: more is a 422 or 413 that ends the loop. Hits are kept rank by rank across the
    queries (every query's first hit, then every query's second, ...), so each query keeps its best hits and
    none is crowded out by another's long list. A hit whose snippet does not fit the characters left is
    dropped, never cut: a cut at any character turns `333メートル` into `33`, which the Librarian would take
    for a second version of the passage that contradicts the first (and could quote). A shorter hit after it
    that fits is still kept. The hits kept stay in their lists' order (the service ranks a query's hits by
    their position in the round).
    """
    hits_left = min(LIBRARIAN.hits_per_round, LIBRARIAN.hits_total - sum(len(r["results"]) for r in history))
    chars_left = LIBRARIAN.snippet_chars_total - sum(len(h["snippet"]) for r in history for h in r["results"])
    kept: set[tuple[int, int]] = set()
    for rank, index in sorted((rank, index) for index, hits in enumerate(lists) for rank in range(len(hits))):
        if hits_left <= 0 or chars_left <= 0:
            break
        size = len(lists[index][rank]["snippet"])
        if size > chars_left:
            continue
        kept.add((index, rank))
        hits_left -= 1
        chars_left -= size
    return [hit for index, hits in enumerate(lists) for rank, hit in enumerate(hits) if (index, rank) in kept]


def cut_snippet(text: str, limit: int = LIBRARIAN.snippet_chars) -> str:
    """`text` as one hit's snippet: whole when it fits `limit`, else cut after its last sentence end within it.

    The sentence end is looked for in the last `SENTENCE_TAIL_CHARS` before the limit (see `SENTENCE_END`);
    a text with none there is cut at the limit. A cut inside a sentence can leave a figure's first digits
    (`高さは33` of `333メートル`), which reads as a claim the chunk does not make.
    """
    if len(text) <= limit:
        return text
    # up to limit + 1, so that the lookahead sees the character after a "." at the limit
    ends = [m.end() for m in SENTENCE_END.finditer(text, max(0, limit - SENTENCE_TAIL_CHARS), limit + 1)]
    ends = [end for end in ends if end <= limit]
    return text[: ends[-1]] if ends else text[:limit]


def _hit(chunk: Chunk, score: float, retrieval: str, query: str) -> dict[str, Any]:
    """A search hit as the contract has it; a chunk longer than a snippet's limit is cut (`cut_snippet`)."""
    return {
        "document_id": chunk.document_id,
        "page": chunk.page,
        "chunk_id": chunk.chunk_id,
        "snippet": cut_snippet(chunk.text),
        "score": round(score, 6),
        "retrieval": retrieval,
        "metadata": {"query": query},
    }


def read_answer(response: httpx.Response) -> dict[str, Any]:
    """The Librarian action a think response carries (any status: 4xx and 5xx bodies are ERROR actions too).

    Raises:
        ServiceError: the body is not a JSON object with an `action` (something in front of the service answered).
    """
    try:
        answer = response.json()
    except ValueError:  # not JSON, or not UTF-8
        raise ServiceError(response) from None
    if not isinstance(answer, dict) or "action" not in answer:
        raise ServiceError(response)
    return answer


def retry_after_s(response: httpx.Response) -> float | None:
    """The seconds an answer's `Retry-After` asks to wait (the service sends 1 or 2 with its 503s).

    Only the seconds form (`Retry-After: 1`) is read; an HTTP date or anything else is None, and the retry
    waits as it would without the header.
    """
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isascii() and value.isdigit() else None


def retryable(status_code: int, answer: Mapping[str, Any] | None) -> bool:
    """Whether sending the same step again may cure it: 429, 5xx, or a 200 TIMEOUT / MODEL_FAILURE (README)."""
    if status_code == 429 or status_code >= 500:
        return True
    return status_code == 200 and answer is not None and answer.get("error_type") in RETRIED_ERROR_TYPES


@dataclass
class _Caller:
    """Sends one step's body, and sends it again (same state, same history) after a failure a retry may cure."""

    client: httpx.AsyncClient
    session: str
    retries: int
    retry_delay: float
    max_retry_after: float
    on_answer: Callable[[dict[str, Any]], None]
    calls: int = 0
    """Requests sent, retries included."""

    async def think(self, body: dict[str, Any]) -> dict[str, Any]:
        """The step's answer: the first that is not retryable, or the last once the retries are spent.

        A retry is sent `retry_delay` seconds after the first failure, doubling, or later when the failed
        answer's `Retry-After` asks for more (at most `max_retry_after` seconds).

        Raises:
            ServiceError: no Librarian answer, after the retries when its status is retryable.
            httpx.TransportError: no answer at all, after the retries.
        """
        delay = self.retry_delay
        for attempt in range(self.retries + 1):
            # a retry has its own request id (as the Go loop's "-r1"), so the service's log tells the two apart
            request = body if attempt == 0 else {**body, "request_id": f"{body['request_id']}-r{attempt}"}
            last = attempt == self.retries
            self.calls += 1
            retry_after: float | None = None
            try:
                response = await self.client.post(THINK_PATH, json=request, headers={"X-Session-Id": self.session})
                answer = read_answer(response)
            except ServiceError as error:
                if last or not retryable(error.status_code, None):
                    raise
                retry_after = error.retry_after
            except httpx.TransportError:
                if last:
                    raise
            else:
                self.on_answer(answer)
                if last or not retryable(response.status_code, answer):
                    return answer
                retry_after = retry_after_s(response)
            await asyncio.sleep(max(delay, min(retry_after or 0.0, self.max_retry_after)))
            delay *= 2
        raise AssertionError("unreachable: the last attempt returns or raises")


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
    max_steps: int = 20,
    retries: int = RETRIES,
    retry_delay: float = RETRY_DELAY_S,
    max_retry_after: float = RETRY_AFTER_CAP_S,
) -> LoopResult:
    """Call think until COMPLETE or ERROR, executing each SEARCH against the corpus.

    A step answered 429, 5xx or 200 ERROR TIMEOUT / MODEL_FAILURE, or not at all, is sent again unchanged up
    to `retries` times (`retry_delay` seconds first, doubling, or the answer's `Retry-After` seconds when that
    is longer, up to `max_retry_after`); `on_step` and `LoopResult.steps` see every answer, the retried ones
    too. An answer that is no Librarian action raises `ServiceError` (its status and the start of its body),
    and `max_steps` SEARCHes without an end raise RuntimeError.
    """
    history: list[dict[str, Any]] = []
    state: Any = None
    steps: list[dict[str, Any]] = []

    def record(answer: dict[str, Any]) -> None:
        steps.append(answer)
        if on_step:
            on_step(len(steps), answer)

    # X-Session-Id lets a load balancer (or the scale-out test's rotating transport) see the session.
    caller = _Caller(client, request_id, retries, retry_delay, max_retry_after, record)
    for step in range(1, max_steps + 1):
        body = {
            "request_id": f"{request_id}-{step}",
            "user_query": question,
            "subject_id": subject_id,
            "search_history": history,
            "state": state,
        }
        if constraints:
            body["constraints"] = constraints
        answer = await caller.think(body)
        if answer.get("action") != "SEARCH":
            return LoopResult(final=answer, calls=caller.calls, steps=steps)
        history.append(execute_search(corpus, answer, k=k, vector=vector, history=history))
        state = answer["state"]
    raise RuntimeError(f"the Librarian asked for more than {max_steps} searches")
