"""Librarian think throughput on one worker (issue 3's performance figure) against a bare echo of the same body.

Payload: a first call (`state: null`) that already carries 3 SEARCH rounds of 100 hits each, so the
step reads the whole history and, with `max_loops` 3 used up, answers COMPLETE. The hits are the
JSQuAD validation paragraphs ranked by BM25 for one question (`reference_orchestrator.corpus`),
ranks 1–100, 101–200 and 201–300 as the three rounds, snippets cut to 150 characters so the body
is ~160 KB (issue 3's size).

Subject: `python -m librarian_svc` as deployed (one uvicorn worker, uvloop + httptools, embedded
engine, JSON access log), `POST /agent/librarian/think`. Baseline: the bare Litestar echo server of
`bench.framework_overhead` (`python -m bench.echo_servers bare --body librarian`), whose body type
is the same `LibrarianRequest` contract, POSTed the same bytes: the cost of receiving, decoding,
validating and answering such a body at all. ratio = librarian / echo req/s, the share of the
transport ceiling the thinking leaves.

    python -m bench.librarian_throughput [--repeat 2] [--duration 10] [--connections 8]
"""

from __future__ import annotations

from typing import Any

import msgspec

from bench.echo_servers import ECHO_PATH
from bench.tools import JSQUAD, WrkSettings, emit, log
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
from contracts.librarian import LibrarianRequest
from reference_orchestrator.corpus import Corpus, jsquad_chunks

MODULE = "bench.librarian_throughput"
THINK_PATH = "/agent/librarian/think"
ROUNDS = 3
HITS_PER_ROUND = 100


def build_payload(question_index: int = 0, snippet_chars: int = 150) -> tuple[bytes, str]:
    """The request body (bytes, exactly what wrk sends) and the question it asks."""
    pairs = list(jsquad_chunks(JSQUAD))
    corpus = Corpus([chunk for chunk, _ in pairs])
    questions = [question for _, qas in pairs for _, question in qas]
    question = questions[question_index]
    ranked = corpus.text_search(question, ROUNDS * HITS_PER_ROUND)
    if len(ranked) < ROUNDS * HITS_PER_ROUND:
        raise RuntimeError(f"question {question_index} has only {len(ranked)} BM25 hits; pick another")
    history = [
        {
            "queries_text": [question],
            "queries_vector": [],
            "results": [
                {
                    "document_id": chunk.document_id,
                    "page": chunk.page,
                    "chunk_id": chunk.chunk_id,
                    "snippet": chunk.text[:snippet_chars],
                    "score": round(score, 4),
                    "retrieval": "text",
                    "metadata": {},
                }
                for chunk, score in ranked[start : start + HITS_PER_ROUND]
            ],
        }
        for start in range(0, ROUNDS * HITS_PER_ROUND, HITS_PER_ROUND)
    ]
    body = msgspec.json.encode(
        {
            "request_id": "bench-throughput-1",
            "user_query": question,
            "subject_id": "jsquad",
            "search_history": history,
            "state": None,
        }
    )
    msgspec.json.decode(body, type=LibrarianRequest)  # the contract accepts it, for both servers
    return body, question


def run(settings: WrkSettings, repeat: int, question_index: int, snippet_chars: int) -> dict[str, Any]:
    body, question = build_payload(question_index, snippet_chars)
    log(f"payload: {len(body)} bytes, {ROUNDS} rounds x {HITS_PER_ROUND} hits, question {question!r}")
    librarian, echo = service("librarian"), echo_server("echo", body="librarian")
    targets = [
        Target("librarian", librarian.url(THINK_PATH), body, expect={"action": "COMPLETE"}),
        Target("echo", echo.url(ECHO_PATH), body),
    ]
    with running([librarian, echo]):
        measured = measure(targets, settings, repeat, one_connection="librarian")
    return report(
        MODULE,
        "requests/s of POST /agent/librarian/think with a 3x100-hit history (~160 KB), one worker",
        servers={
            "librarian": "python -m librarian_svc  # LLM_PROVIDER=heuristic LOG_FORMAT=json, 1 uvicorn worker",
            "echo": "python -m bench.echo_servers bare --body librarian"
            "  # Litestar([echo]), body type LibrarianRequest",
        },
        payload={
            "bytes": len(body),
            "rounds": ROUNDS,
            "hits_per_round": HITS_PER_ROUND,
            "snippet_chars": snippet_chars,
            "question_index": question_index,
            "question": question,
            "source": "JSQuAD valid-v1.3 paragraphs, BM25 ranks 1-300 for the question",
        },
        first_response=measured.first_response,
        wrk=wrk_report(settings, repeat),
        **against_echo("librarian", measured),
    )


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__, repeat=2, duration=10, connections=8)
    parser.add_argument("--question-index", type=int, default=0, help="which JSQuAD question ranks the hits")
    parser.add_argument("--snippet-chars", type=int, default=150, help="snippet length (150 gives ~160 KB)")
    args = parser.parse_args(argv)
    emit(run(wrk_settings(args), args.repeat, args.question_index, args.snippet_chars), args.output)


if __name__ == "__main__":
    main()
