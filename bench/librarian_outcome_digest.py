"""Has a change altered what the Librarian decides? One SHA-256 per question, and one over the slice.

Speed work on the Librarian must leave its outcome exactly as it was. This runs the same full loops as
`bench.librarian_quality` (same slices, same in-process service and BM25 search side, embedded engine by
default) and hashes, per question, every step's body in canonical JSON: actions, queries, filter hints,
missing elements, evidence, coverage notes, error type and message, and the state each step seals
(decoded, without its issue time; the token's bytes differ with the signing key). `usage` is left out
(the same for every heuristic step). Run it on the branch base and on the change, and compare:

    python -m bench.librarian_outcome_digest --slice dev [--per-question FILE] [--output FILE]

`slice_sha256` equal on both means every question's every step is byte-for-byte the same; with
`--per-question` the JSON lines (qid, sha256) say which questions differ. Tuning slices only: `final` and
`held-out` are refused, as in `bench.librarian_quality --misses`.

The slice's loops see five hits per query; `--heavy N` adds, for the slice's first N questions, one first call
carrying `--heavy-rounds` rounds of 100 BM25 hits each (snippets cut to 150 characters, the shape of
`bench.librarian_throughput`'s payload), whose response is hashed the same way (`heavy_sha256`): large pools,
near-duplicates and many ties are where a faster ingest or scoring could decide differently.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.librarian_quality import JSQUAD, choose, load_questions
from bench.librarian_throughput import bm25_rounds
from bench.tools import command_line, emit
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.settings import load_settings
from librarian_svc.state.token import StateCodec
from reference_orchestrator.corpus import Corpus
from reference_orchestrator.loop import run_question

MODULE = "bench.librarian_outcome_digest"
SIGNING_KEY = b"outcome-digest-key-0123456789"
"""Any fixed key: the service and this tool must agree to read the states the steps seal."""
TUNING_SLICES = ("dev", "dev2")


def step_record(step: dict[str, Any], codec: StateCodec) -> dict[str, Any]:
    """A step's body as compared: usage dropped, the state token replaced by the state it carries."""
    record = {key: value for key, value in step.items() if key not in ("usage", "state")}
    token = step.get("state")
    if isinstance(token, str):
        record["state"] = msgspec.to_builtins(codec.read(token).d)
    return record


def question_digest(steps: list[dict[str, Any]], codec: StateCodec) -> str:
    """SHA-256 of the question's steps in canonical JSON (sorted keys)."""
    records = [step_record(step, codec) for step in steps]
    return hashlib.sha256(msgspec.json.encode(records, order="sorted")).hexdigest()


HEAVY_HITS_PER_ROUND = 100
HEAVY_SNIPPET_CHARS = 150


def heavy_body(corpus: Corpus, qid: str, question: str, rounds: int) -> dict[str, Any]:
    """A first call that already carries `rounds` rounds of 100 BM25 hits for the question."""
    ranked = corpus.text_search(question, rounds * HEAVY_HITS_PER_ROUND)
    history = bm25_rounds(ranked, question, HEAVY_SNIPPET_CHARS, HEAVY_HITS_PER_ROUND)
    return {
        "request_id": f"heavy-{qid}",
        "user_query": question,
        "subject_id": "jsquad",
        "search_history": history,
        "state": None,
        "constraints": {"max_loops": max(1, len(history))},
    }


async def digests(
    slice_: str, sample: int, k: int, heavy: int, heavy_rounds: int
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    corpus, questions = load_questions(JSQUAD)
    chosen = choose(questions, sample=sample, seed=0, offset=0, slice_=slice_)
    configure_logging("console", "warning", stream=sys.stderr)
    settings = load_settings({**os.environ, "STATE_SIGNING_KEYS": SIGNING_KEY.decode()})
    codec = StateCodec(keys=[SIGNING_KEY], max_state_bytes=settings.state.max_state_bytes)
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    per_question: list[tuple[str, str]] = []
    actions: dict[str, int] = {}
    started = time.perf_counter()
    async with httpx.AsyncClient(transport=transport, base_url="http://librarian") as client:
        for qid, question, _ in chosen:
            result = await run_question(client, corpus, question, request_id=f"q{qid}", k=k, vector=False)
            per_question.append((qid, question_digest(result.steps, codec)))
            actions[str(result.final.get("action"))] = actions.get(str(result.final.get("action")), 0) + 1
        heavy_lines = []
        for qid, question, _ in chosen[:heavy]:
            body = heavy_body(corpus, qid, question, heavy_rounds)
            response = await client.post("/agent/librarian/think", json=body)
            heavy_lines.append(f"{qid} {question_digest([response.json()], codec)}\n")
    whole = hashlib.sha256("".join(f"{qid} {digest}\n" for qid, digest in per_question).encode()).hexdigest()
    report = {
        "module": MODULE,
        "command": command_line(
            MODULE, ["--slice", slice_, "--heavy", str(heavy), "--heavy-rounds", str(heavy_rounds)]
        ),
        "engine": settings.llm.provider,
        "slice": slice_,
        "questions": len(per_question),
        "final_actions": actions,
        "slice_sha256": whole,
        "heavy_questions": len(heavy_lines),
        "heavy_rounds": heavy_rounds,
        "heavy_sha256": hashlib.sha256("".join(heavy_lines).encode()).hexdigest(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    return report, per_question


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slice", choices=TUNING_SLICES, default="dev")
    parser.add_argument("--sample", type=int, default=1_000_000, help="at most this many questions of the slice")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--heavy", type=int, default=0, help="also this many first calls with a large history")
    parser.add_argument("--heavy-rounds", type=int, default=3, help="rounds of 100 hits in each heavy call")
    parser.add_argument("--per-question", type=Path, help="write 'qid sha256' lines here")
    parser.add_argument("--output", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    report, per_question = asyncio.run(digests(args.slice, args.sample, args.k, args.heavy, args.heavy_rounds))
    if args.per_question is not None:
        args.per_question.write_text("".join(f"{qid} {digest}\n" for qid, digest in per_question), encoding="utf-8")
    emit(report, args.output)


if __name__ == "__main__":
    main()
