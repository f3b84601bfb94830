"""Librarian retrieval quality on JSQuAD (issue 3's target) against one-shot BM25, in one run.

Corpus: the 1,145 JSQuAD validation paragraphs (document_id = title, page = paragraph index). The engine is whatever
the environment configures (LLM_PROVIDER, keys), the embedded heuristic engine by default.
The reference orchestrator answers every SEARCH with the top-k BM25 hits per `queries_text`
entry (character bigrams), exactly as issue 3 specifies. Recall = the gold paragraph is among
the returned snippets. Baseline: BM25 top-k of the raw question, same corpus, same run.

    python -m bench.librarian_quality [--sample 1000] [--seed 7] [--vector]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

import httpx

from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.settings import load_settings
from reference_orchestrator.corpus import Corpus, jsquad_chunks
from reference_orchestrator.loop import run_question

JSQUAD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "jsquad" / "valid-v1.3.json"


def load_questions(path: Path) -> tuple[Corpus, list[tuple[str, str, tuple[str, int]]]]:
    chunks, questions = [], []
    for chunk, qas in jsquad_chunks(path):
        chunks.append(chunk)
        questions += [(qid, q, (chunk.document_id, chunk.page)) for qid, q in qas]
    return Corpus(chunks), questions


DEV_SAMPLE = 600
"""The tuning slice: `random.Random(seed).sample(questions, DEV_SAMPLE)`. `--held-out` measures on the rest."""


def choose(
    questions: list[tuple[str, str, tuple[str, int]]], *, sample: int, seed: int, offset: int, held_out: bool
) -> list[tuple[str, str, tuple[str, int]]]:
    """The questions a run measures: a seeded sample, or every question outside the tuning slice."""
    if held_out:
        dev = {qid for qid, _, _ in random.Random(seed).sample(questions, DEV_SAMPLE)}
        rest = [q for q in questions if q[0] not in dev]
        return rest[:sample] if sample < len(rest) else rest
    rng = random.Random(seed)
    return rng.sample(questions, min(len(questions), sample + offset))[offset:]


async def evaluate(
    sample: int, seed: int, vector: bool, k: int, offset: int, held_out: bool = False
) -> dict[str, object]:
    corpus, questions = load_questions(JSQUAD)
    chosen = choose(questions, sample=sample, seed=seed, offset=offset, held_out=held_out)

    baseline = {1: 0, 2: 0, 5: 0}
    for _, question, gold in chosen:
        ranked = [(c.document_id, c.page) for c, _ in corpus.text_search(question, 5)]
        for depth in baseline:
            baseline[depth] += gold in ranked[:depth]

    configure_logging("console", "warning")
    # The provider comes from the environment (embedded engine when no key is set), so the same
    # benchmark runs unchanged against Gemini, OpenAI or an OpenAI-compatible server.
    settings = load_settings()
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    found = snippets = calls = errors = 0
    started = time.perf_counter()
    async with httpx.AsyncClient(transport=transport, base_url="http://librarian") as client:
        for index, (qid, question, gold) in enumerate(chosen):
            result = await run_question(client, corpus, question, request_id=f"q{qid}", k=k, vector=vector)
            calls += result.calls
            if result.action != "COMPLETE":
                errors += 1
                continue
            returned = {(e["document_id"], p) for e in result.final["evidence"] for p in e["pages"]}
            snippets += sum(len(e["snippets"]) for e in result.final["evidence"])
            found += gold in returned
            if index and index % 200 == 0:
                print(f"  {index}/{len(chosen)} recall so far {found / (index + 1):.3f}", file=sys.stderr)
    n = len(chosen)
    return {
        "engine": settings.llm.provider,
        "model": settings.llm.model,
        "questions": n,
        "seed": seed,
        "slice": f"held out: every question outside the {DEV_SAMPLE}-question tuning slice" if held_out else "sample",
        "k": k,
        "vector_search": vector,
        "librarian": {
            "recall": round(found / n, 4),
            "mean_snippets": round(snippets / max(1, n - errors), 3),
            "mean_think_calls": round(calls / n, 3),
            "error_rate": round(errors / n, 4),
        },
        "baseline_bm25_raw_question": {f"recall@{d}": round(v / n, 4) for d, v in baseline.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--offset", type=int, default=0, help="skip this many sampled questions (held-out slices)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--vector", action="store_true", help="also answer queries_vector (cosine)")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help=f"measure on every question outside the tuning slice (the first {DEV_SAMPLE} sampled with --seed)",
    )
    args = parser.parse_args()
    report = asyncio.run(evaluate(args.sample, args.seed, args.vector, args.k, args.offset, args.held_out))
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
