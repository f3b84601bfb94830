"""Librarian think throughput on one worker (issue 3's performance figure) against a bare echo of the same body.

Payload: a first call (`state: null`) that already carries 3 SEARCH rounds of 100 hits each, so the
step reads the whole history and, with `max_loops` 3 used up, answers COMPLETE. The hits are the
JSQuAD validation paragraphs ranked by BM25 for one question (`reference_orchestrator.corpus`),
ranks 1–100, 101–200 and 201–300 as the three rounds, snippets cut to 150 characters so the body
is ~160 KB (issue 3's size).

Subject: `python -m librarian_svc` as deployed (one uvicorn worker, uvloop + httptools, embedded
engine, JSON access log), `POST /agent/librarian/think`. Baseline: the bare Litestar echo server of
`bench.framework_overhead` (`python -m bench.echo_servers bare`), whose body type is the same
`LibrarianRequest` contract, POSTed the same bytes: the cost of receiving, decoding, validating and
answering such a body at all. ratio = librarian / echo req/s, the share of the transport ceiling
the thinking leaves.

    python -m bench.librarian_throughput [--repeat 2] [--duration 10] [--connections 8]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.echo_servers import ECHO_PATH
from bench.tools import (
    JSQUAD,
    Target,
    WrkSettings,
    command_line,
    emit,
    ensure_wrk,
    free_port,
    log,
    machine_info,
    measure_alternating,
    post_script,
    ratio,
    run_wrk,
    server_process,
    shown_wrk_command,
    summarize,
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


def check_once(url: str, body: bytes) -> dict[str, Any]:
    """One request before the load: it must succeed, and the report says what it answered."""
    response = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=30.0)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:500]}")
    answer = response.json()
    return {"status": response.status_code, "action": answer.get("action"), "response_bytes": len(response.content)}


def run(settings: WrkSettings, repeat: int, question_index: int, snippet_chars: int) -> dict[str, Any]:
    wrk = ensure_wrk()
    body, question = build_payload(question_index, snippet_chars)
    log(f"payload: {len(body)} bytes, {ROUNDS} rounds x {HITS_PER_ROUND} hits, question {question!r}")
    ports = {"librarian": free_port(), "echo": free_port()}
    urls = {
        "librarian": f"http://127.0.0.1:{ports['librarian']}{THINK_PATH}",
        "echo": f"http://127.0.0.1:{ports['echo']}{ECHO_PATH}",
    }
    with ExitStack() as stack:
        stack.enter_context(
            server_process(
                [sys.executable, "-m", "librarian_svc"], port=ports["librarian"], env={"PORT": str(ports["librarian"])}
            )
        )
        stack.enter_context(
            server_process(
                [sys.executable, "-m", "bench.echo_servers", "bare", "--port", str(ports["echo"])],
                port=ports["echo"],
                ready_path=ECHO_PATH,
                any_status=True,
            )
        )
        checks = {name: check_once(url, body) for name, url in urls.items()}
        if checks["librarian"]["action"] != "COMPLETE":
            raise RuntimeError(f"the Librarian answered {checks['librarian']}, expected COMPLETE")
        targets = [Target(name, url, body) for name, url in urls.items()]
        results = measure_alternating(wrk, targets, settings, repeat)
        serial_settings = WrkSettings(threads=1, connections=1, duration_s=5, warmup_s=0, timeout_s=settings.timeout_s)
        with post_script(body) as script:
            serial = run_wrk(wrk, urls["librarian"], script, serial_settings, warmup=False)
        log(f"librarian, one connection: {serial.requests_per_s} req/s p50 {serial.p50_ms} ms")
    librarian, echo = summarize(results["librarian"]), summarize(results["echo"])
    return {
        "benchmark": "librarian_throughput",
        "question": "requests/s of POST /agent/librarian/think with a 3x100-hit history (~160 KB), one worker",
        "command": command_line(MODULE, sys.argv[1:]),
        "servers": {
            "librarian": "python -m librarian_svc  # LLM_PROVIDER=heuristic LOG_FORMAT=json, 1 uvicorn worker",
            "echo": "python -m bench.echo_servers bare  # Litestar([echo]), body type LibrarianRequest",
        },
        "payload": {
            "bytes": len(body),
            "rounds": ROUNDS,
            "hits_per_round": HITS_PER_ROUND,
            "snippet_chars": snippet_chars,
            "question_index": question_index,
            "question": question,
            "source": "JSQuAD valid-v1.3 paragraphs, BM25 ranks 1-300 for the question",
        },
        "first_response": checks,
        "wrk": {**settings.as_dict(), "repeat": repeat, "command": shown_wrk_command(settings)},
        "librarian": librarian,
        "echo_baseline": echo,
        "ratio_librarian_over_echo_requests_per_s": ratio(librarian["requests_per_s"], echo["requests_per_s"]),
        "ratio_librarian_over_echo_p50": ratio(librarian["p50_ms"], echo["p50_ms"]),
        "ratio_librarian_over_echo_p99": ratio(librarian["p99_ms"], echo["p99_ms"]),
        "librarian_one_connection": {
            "wrk": shown_wrk_command(serial_settings),
            "requests_per_s": serial.requests_per_s,
            "p50_ms": serial.p50_ms,
            "p99_ms": serial.p99_ms,
        },
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2, help="alternating measured rounds per server")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured round")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds before each server's first round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--question-index", type=int, default=0, help="which JSQuAD question ranks the hits")
    parser.add_argument("--snippet-chars", type=int, default=150, help="snippet length (150 gives ~160 KB)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    settings = WrkSettings(
        threads=args.threads, connections=args.connections, duration_s=args.duration, warmup_s=args.warmup
    )
    emit(run(settings, args.repeat, args.question_index, args.snippet_chars), args.output)


if __name__ == "__main__":
    main()
