"""GRACE step throughput on one worker, against a bare echo of the same body.

Payload: the step that does the most work, replayed as is (the service is stateless, so the same
state and `tool_result` are valid on every request): a session on a JSQuAD question whose first
SEARCH is answered with its top 40 BM25 paragraphs (snippets cut to 300 characters, scores scaled to
[0, 1]). The step scores the search, runs the reasoning step (the embedded engine's extractive answer
over the 8 hits kept) and answers COMPLETE (checked before the load).

Subject: `python -m bench.grace_servers grace` (the deployed app with GRACE, one uvicorn worker,
uvloop + httptools, embedded engine, JSON logs), `POST /agent/grace/step`. Baseline:
`python -m bench.grace_servers echo` (`Litestar([echo])`, body type `GraceRequest`) POSTed the same
bytes. ratio = grace / echo req/s: the share of the transport ceiling left after the step's work.

    python -m bench.grace_throughput [--repeat 2] [--duration 8] [--connections 8]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.grace_servers import ECHO_PATH
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
from contracts.grace import GraceRequest
from reference_orchestrator.corpus import Corpus, jsquad_chunks

MODULE = "bench.grace_throughput"
STEP_PATH = "/agent/grace/step"
HITS = 40


def build_payload(base_url: str, question_index: int, snippet_chars: int) -> tuple[bytes, str]:
    """Walk to the first SEARCH on the running server, then build the request that answers it."""
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
    msgspec.json.decode(body, type=GraceRequest)  # the contract accepts it, for both servers
    return body, question


def check_once(url: str, body: bytes) -> dict[str, Any]:
    """One request before the load: it must succeed, and the report says what it answered."""
    response = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=30.0)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:500]}")
    return {"action": response.json().get("action"), "response_bytes": len(response.content)}


def run(settings: WrkSettings, repeat: int, question_index: int, snippet_chars: int) -> dict[str, Any]:
    wrk = ensure_wrk()
    ports = {"grace": free_port(), "echo": free_port()}
    roots = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    urls = {"grace": roots["grace"] + STEP_PATH, "echo": roots["echo"] + ECHO_PATH}
    with ExitStack() as stack:
        stack.enter_context(
            server_process(
                [sys.executable, "-m", "bench.grace_servers", "grace", "--port", str(ports["grace"])],
                port=ports["grace"],
                env={"LOG_FORMAT": "json"},
            )
        )
        stack.enter_context(
            server_process(
                [sys.executable, "-m", "bench.grace_servers", "echo", "--port", str(ports["echo"])],
                port=ports["echo"],
                ready_path=ECHO_PATH,
                any_status=True,
            )
        )
        body, question = build_payload(roots["grace"], question_index, snippet_chars)
        log(f"payload: {len(body)} bytes, {HITS} hits, question {question!r}")
        checks = {name: check_once(url, body) for name, url in urls.items()}
        if checks["grace"]["action"] != "COMPLETE":
            raise RuntimeError(f"GRACE answered {checks['grace']}, expected COMPLETE")
        targets = [Target(name, url, body) for name, url in urls.items()]
        results = measure_alternating(wrk, targets, settings, repeat)
        serial_settings = WrkSettings(threads=1, connections=1, duration_s=5, warmup_s=0, timeout_s=settings.timeout_s)
        with post_script(body) as script:
            serial = run_wrk(wrk, urls["grace"], script, serial_settings, warmup=False)
        log(f"grace, one connection: {serial.requests_per_s} req/s p50 {serial.p50_ms} ms")
    grace, echo = summarize(results["grace"]), summarize(results["echo"])
    return {
        "benchmark": "grace_throughput",
        "question": "requests/s of the GRACE step that scores a 40-hit search and answers COMPLETE, one worker",
        "command": command_line(MODULE, sys.argv[1:]),
        "servers": {
            "grace": "python -m bench.grace_servers grace  # the deployed app with GRACE, heuristic, JSON logs",
            "echo": "python -m bench.grace_servers echo  # Litestar([echo]), body type GraceRequest",
        },
        "payload": {
            "bytes": len(body),
            "hits": HITS,
            "snippet_chars": snippet_chars,
            "question_index": question_index,
            "question": question,
            "source": "JSQuAD valid-v1.3 paragraphs, BM25 ranks 1-40 for the question, scores / best score",
        },
        "first_response": checks,
        "wrk": {**settings.as_dict(), "repeat": repeat, "command": shown_wrk_command(settings)},
        "grace": grace,
        "echo_baseline": echo,
        "ratio_grace_over_echo_requests_per_s": ratio(grace["requests_per_s"], echo["requests_per_s"]),
        "ratio_grace_over_echo_p50": ratio(grace["p50_ms"], echo["p50_ms"]),
        "grace_one_connection": {
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
    parser.add_argument("--duration", type=int, default=8, help="seconds per measured round")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds before each server's first round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--question-index", type=int, default=0, help="which JSQuAD question ranks the hits")
    parser.add_argument("--snippet-chars", type=int, default=300)
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    settings = WrkSettings(
        threads=args.threads, connections=args.connections, duration_s=args.duration, warmup_s=args.warmup
    )
    emit(run(settings, args.repeat, args.question_index, args.snippet_chars), args.output)


if __name__ == "__main__":
    main()
