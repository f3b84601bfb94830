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

    python -m bench.librarian_throughput [--repeat 2] [--duration 10] [--connections 8] [--rounds 3] [--floor]

`--rounds N` sends N rounds of 100 hits instead (ranks 1 to N×100; a question with fewer BM25 hits
is skipped for the next one that has enough, and the report names it): per-step time at 1, 3 and
10 rounds is `librarian_one_connection`'s p50 at `--rounds 1`, `3` and `10`.

`--floor` adds a third server to the same rotation: the service with the Librarian thinking about the
history's first 5 hits only (`bench.thinking_floor_variant`), POSTed the same bytes. Its share of the echo
(`ratio_floor_over_echo_requests_per_s`) is the ceiling of the Librarian's with the thinking free: what
decoding, validating, the graph run, the hash chain and the answer leave.
"""

from __future__ import annotations

from typing import Any

import msgspec

from bench.echo_servers import ECHO_PATH
from bench.thinking_floor_variant import FLOOR_HITS
from bench.thinking_floor_variant import MODULE as FLOOR_MODULE
from bench.tools import JSQUAD, WrkSettings, emit, log, service_label, service_workers
from bench.wrk_compare import (
    Comparison,
    Target,
    against_echo,
    arguments,
    echo_server,
    measure,
    ratios,
    report,
    running,
    service,
    wrk_report,
    wrk_settings,
)
from contracts.librarian import LibrarianRequest
from reference_orchestrator.corpus import Chunk, Corpus, jsquad_chunks

MODULE = "bench.librarian_throughput"
THINK_PATH = "/agent/librarian/think"
ROUNDS = 3
HITS_PER_ROUND = 100


def bm25_rounds(
    ranked: list[tuple[Chunk, float]], question: str, snippet_chars: int, per_round: int = HITS_PER_ROUND
) -> list[dict[str, Any]]:
    """A search history of BM25-ranked paragraphs, `per_round` hits a round, as the Go side would send it."""
    return [
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
                for chunk, score in ranked[start : start + per_round]
            ],
        }
        for start in range(0, len(ranked), per_round)
    ]


def build_payload(question_index: int = 0, snippet_chars: int = 150, rounds: int = ROUNDS) -> tuple[bytes, str]:
    """The request body (bytes, exactly what wrk sends) and the question it asks.

    The question is the first from `question_index` on with at least `rounds` × 100 BM25 hits.
    """
    pairs = list(jsquad_chunks(JSQUAD))
    corpus = Corpus([chunk for chunk, _ in pairs])
    questions = [question for _, qas in pairs for _, question in qas]
    wanted = rounds * HITS_PER_ROUND
    for question in questions[question_index:]:
        ranked = corpus.text_search(question, wanted)
        if len(ranked) >= wanted:
            break
    else:
        raise RuntimeError(f"no question from {question_index} on has {wanted} BM25 hits")
    history = bm25_rounds(ranked[:wanted], question, snippet_chars)
    body = msgspec.json.encode(
        {
            "request_id": "bench-throughput-1",
            "user_query": question,
            "subject_id": "jsquad",
            "search_history": history,
            "state": None,
            # Fewer rounds than the default loop limit: the limit is that many, so the step still completes.
            **({"constraints": {"max_loops": rounds}} if rounds < ROUNDS else {}),
        }
    )
    msgspec.json.decode(body, type=LibrarianRequest)  # the contract accepts it, for both servers
    return body, question


def run(
    settings: WrkSettings,
    repeat: int,
    question_index: int,
    snippet_chars: int,
    rounds: int = ROUNDS,
    *,
    floor: bool = False,
) -> dict[str, Any]:
    body, question = build_payload(question_index, snippet_chars, rounds)
    log(f"payload: {len(body)} bytes, {rounds} rounds x {HITS_PER_ROUND} hits, question {question!r}")
    librarian, echo = service("librarian"), echo_server("echo", body="librarian")
    servers = [librarian, echo]
    targets = [
        Target("librarian", librarian.url(THINK_PATH), body, expect={"action": "COMPLETE"}),
        Target("echo", echo.url(ECHO_PATH), body),
    ]
    if floor:
        servers.append(floor_server := service("floor", FLOOR_MODULE))
        targets.append(Target("floor", floor_server.url(THINK_PATH), body, expect={"action": "COMPLETE"}))
    with running(servers):
        measured = measure(targets, settings, repeat, one_connection="librarian")
    return report(
        MODULE,
        f"requests/s of POST /agent/librarian/think with a {rounds}x100-hit history, {service_workers()} worker(s)",
        servers={
            "librarian": service_label(),
            "echo": "python -m bench.echo_servers bare --body librarian"
            "  # Litestar([echo]), body type LibrarianRequest",
        },
        payload={
            "bytes": len(body),
            "rounds": rounds,
            "hits_per_round": HITS_PER_ROUND,
            "snippet_chars": snippet_chars,
            "question_index": question_index,
            "question": question,
            "source": f"JSQuAD valid-v1.3 paragraphs, BM25 ranks 1-{rounds * HITS_PER_ROUND} for the question",
        },
        first_response=measured.first_response,
        wrk=wrk_report(settings, repeat),
        **against_echo("librarian", measured),
        **(floor_fields(measured) if floor else {}),
    )


def floor_fields(measured: Comparison) -> dict[str, Any]:
    """The floor's median round and its ratios: to the echo (the ceiling), and the Librarian's to it."""
    return {
        "floor": measured.medians["floor"],
        "floor_server": f"python -m {FLOOR_MODULE}  # the Librarian's pool from the first {FLOOR_HITS} hits only",
        **ratios(measured.medians, "floor", "echo"),
        **ratios(measured.medians, "librarian", "floor"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__, repeat=2, duration=10, connections=8)
    parser.add_argument("--question-index", type=int, default=0, help="which JSQuAD question ranks the hits")
    parser.add_argument("--snippet-chars", type=int, default=150, help="snippet length (150 gives ~160 KB)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="SEARCH rounds of 100 hits in the history")
    parser.add_argument(
        "--floor",
        action="store_true",
        help=f"also load the service thinking about {FLOOR_HITS} hits only (the ceiling)",
    )
    args = parser.parse_args(argv)
    figures = run(
        wrk_settings(args), args.repeat, args.question_index, args.snippet_chars, args.rounds, floor=args.floor
    )
    emit(figures, args.output)


if __name__ == "__main__":
    main()
