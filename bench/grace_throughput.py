"""GRACE step throughput on one worker, against a bare echo of the same body.

Payload: the step that does the most work, replayed as is (the service is stateless, so the same
state and `tool_result` are valid on every request): a session on a JSQuAD question whose first
SEARCH is answered with its top 40 BM25 paragraphs (snippets cut to 300 characters, scores scaled to
[0, 1]). The step scores the search, runs the reasoning step (the embedded engine's extractive answer
over the 8 hits kept) and answers COMPLETE (checked before the load).

Subject: `python -m librarian_svc` as deployed (one uvicorn worker, uvloop + httptools, embedded
engine, JSON logs), `POST /agent/grace/step`. Baseline: `python -m bench.echo_servers bare --body
grace` (`Litestar([echo])`, body type `GraceRequest`) POSTed the same bytes. ratio = grace / echo
req/s: the share of the transport ceiling left after the step's work.

    python -m bench.grace_throughput [--repeat 2] [--duration 8] [--connections 8]
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from bench.echo_servers import ECHO_PATH
from bench.tools import JSQUAD, WrkSettings, emit, log, service_label, service_workers
from bench.wrk_compare import (
    Target,
    against_echo,
    arguments,
    echo_server,
    measure,
    report,
    running,
    service,
    wrk_report,
    wrk_settings,
)
from contracts.grace import GraceRequest
from reference_orchestrator.corpus import Corpus, jsquad_chunks

MODULE = "bench.grace_throughput"
STEP_PATH = "/agent/grace/step"
HITS = 40


def ranked_hits(question_index: int = 0, snippet_chars: int = 300) -> tuple[str, list[dict[str, Any]]]:
    """A JSQuAD question and its `HITS` BM25 hits as the search side would send them, scores relative to the best."""
    pairs = list(jsquad_chunks(JSQUAD))
    corpus = Corpus([chunk for chunk, _ in pairs])
    question = [q for _, qas in pairs for _, q in qas][question_index]
    ranked = corpus.text_search(question, HITS)
    top = ranked[0][1] if ranked else 1.0
    hits = [
        {
            "document_id": chunk.document_id,
            "page": chunk.page,
            "chunk_id": chunk.chunk_id,
            "snippet": chunk.text[:snippet_chars],
            "score": round(score / top, 4),
        }
        for chunk, score in ranked
    ]
    return question, hits


def build_payload(
    base_url: str, question_index: int, snippet_chars: int, *, this_contract: bool = True
) -> tuple[bytes, str]:
    """Walk to the first SEARCH on the running server, then build the request that answers it.

    `this_contract=False` for a server of an earlier tree (`bench.versus_tree`), whose state the request
    carries back as that server gave it, in that tree's contract.
    """
    question, hits = ranked_hits(question_index, snippet_chars)
    first = httpx.post(f"{base_url}{STEP_PATH}", json={"request_id": "bench-grace-0", "query": question}, timeout=30)
    search = first.json()
    if search.get("action") != "SEARCH":
        raise RuntimeError(f"the first call answered {search}, expected SEARCH")
    body = msgspec.json.encode(
        {
            "request_id": "bench-grace-1",
            "state": search["state"],
            "tool_result": {"step_id": search["step_id"], "hits": hits},
        }
    )
    if this_contract:
        msgspec.json.decode(body, type=GraceRequest)  # the contract accepts it, for both servers
    return body, question


def run(settings: WrkSettings, repeat: int, question_index: int, snippet_chars: int) -> dict[str, Any]:
    grace, echo = service("grace"), echo_server("echo", body="grace")
    with running([grace, echo]):
        body, question = build_payload(grace.url(""), question_index, snippet_chars)  # a state from the service
        log(f"payload: {len(body)} bytes, {HITS} hits, question {question!r}")
        targets = [
            Target("grace", grace.url(STEP_PATH), body, expect={"action": "COMPLETE"}),
            Target("echo", echo.url(ECHO_PATH), body),
        ]
        measured = measure(targets, settings, repeat, one_connection="grace")
    return report(
        MODULE,
        f"requests/s of the GRACE step that scores a 40-hit search and answers COMPLETE, {service_workers()} worker(s)",
        servers={
            "grace": service_label(),
            "echo": "python -m bench.echo_servers bare --body grace  # Litestar([echo]), body type GraceRequest",
        },
        payload={
            "bytes": len(body),
            "hits": HITS,
            "snippet_chars": snippet_chars,
            "question_index": question_index,
            "question": question,
            "source": "JSQuAD valid-v1.3 paragraphs, BM25 ranks 1-40 for the question, scores / best score",
        },
        first_response=measured.first_response,
        wrk=wrk_report(settings, repeat),
        **against_echo("grace", measured),
    )


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__, repeat=2, duration=8, connections=8)
    parser.add_argument("--question-index", type=int, default=0, help="which JSQuAD question ranks the hits")
    parser.add_argument("--snippet-chars", type=int, default=300)
    args = parser.parse_args(argv)
    emit(run(wrk_settings(args), args.repeat, args.question_index, args.snippet_chars), args.output)


if __name__ == "__main__":
    main()
