"""Latency of search_text.sql (the Go side's queries_text SQL) on a larger table, by kind of entry.

The 1,145 JSQuAD paragraphs are loaded into a temporary PostgreSQL (Debian's) and copied `--copies`
times with new ids (default 80: 91,600 chunks), then the entries the Librarian's first SEARCH writes
(the key terms of `--sample` JSQuAD questions) are run through the prepared statement, as a Go service
would. Entries with a term of 3+ characters are served by the trigram index; entries made only of 1-2
character terms fall back to a sequential scan (pg_trgm cannot index them), so the two are reported
apart. Baseline in the same run: a plain sequential scan of the table (`count(*)` with a strpos filter).
Before copying, the one-shot recall@5 of the gold paragraph for every JSQuAD question (its key terms as
the entry) is measured on the 1,145 paragraphs, for the shipped SQL and for a variant in which every
term selects hits (what the 3-character rule costs in recall).

    python -m bench.postgres_text_search [--copies 80] [--sample 200]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import psycopg

from bench.librarian_quality import JSQUAD, load_questions
from bench.tools import emit
from graphs.librarian.question import profile_question
from reference_orchestrator import pg_server
from reference_orchestrator.postgres import PostgresCorpus, sql


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {
        "n": len(ordered),
        "p50_ms": round(ordered[len(ordered) // 2], 1),
        "p90_ms": round(ordered[int(len(ordered) * 0.9)], 1),
        "max_ms": round(ordered[-1], 1),
    }


SHIPPED_CONDITION = "WHERE char_length(term) >= 3\n  ))"
ALL_TERMS_CONDITION = "WHERE true\n  ))"
SHIPPED_FALLBACK = "WHERE NOT EXISTS (SELECT FROM terms WHERE char_length(term) >= 3)"
NO_FALLBACK = "WHERE false"


def all_terms_variant() -> str:
    """search_text.sql with every term selecting through the first branch (and the fallback branch off)."""
    text = sql("search_text")
    if SHIPPED_CONDITION not in text or SHIPPED_FALLBACK not in text:
        raise SystemExit("search_text.sql changed: update all_terms_variant()")
    return text.replace(SHIPPED_CONDITION, ALL_TERMS_CONDITION).replace(SHIPPED_FALLBACK, NO_FALLBACK)


def recall_at_5(
    cursor: psycopg.RawCursor[tuple[object, ...]], statement: str, questions: list[tuple[str, str, tuple[str, int]]]
) -> float:
    found = 0
    for _, question, gold in questions:
        entry = " ".join(profile_question(question).key_terms)
        rows = cursor.execute(statement, (entry, 5), prepare=True).fetchall()
        found += gold in {(str(r[0]), int(str(r[1]))) for r in rows}
    return round(found / len(questions), 4)


def run(copies: int, sample: int, seed: int, bindir: Path | None) -> dict[str, object]:
    corpus, questions = load_questions(JSQUAD)
    chosen = random.Random(seed).sample(questions, min(sample, len(questions)))
    entries = [" ".join(profile_question(q).key_terms) for _, q, _ in chosen]
    with pg_server.temporary_postgres(bindir) as server:
        PostgresCorpus.create(server.conninfo, corpus.chunks, vector=False).close()
        with psycopg.connect(server.conninfo, autocommit=True) as conn:
            recall = {
                "questions": len(questions),
                "shipped_sql": recall_at_5(psycopg.RawCursor(conn), sql("search_text"), questions),
                "every_term_selects": recall_at_5(psycopg.RawCursor(conn), all_terms_variant(), questions),
            }
            started = time.perf_counter()
            conn.execute(
                "INSERT INTO chunks (document_id, page, chunk_id, text) "
                "SELECT document_id || '/' || g, page, chunk_id || '/' || g, text "
                "FROM chunks, generate_series(1, %s) AS g",
                (copies - 1,),
            )
            conn.execute("VACUUM ANALYZE chunks")
            load_seconds = time.perf_counter() - started
            row = conn.execute(
                "SELECT count(*), pg_size_pretty(pg_table_size('chunks')), "
                "pg_size_pretty(pg_relation_size('chunks_search_text_trgm')), version() FROM chunks"
            ).fetchone()
            assert row is not None
            cursor = psycopg.RawCursor(conn)
            indexed: list[float] = []
            sequential: list[float] = []
            for entry in entries:
                t0 = time.perf_counter()
                cursor.execute(sql("search_text"), (entry, 5), prepare=True).fetchall()
                elapsed = 1000 * (time.perf_counter() - t0)
                (indexed if any(len(t) >= 3 for t in entry.split()) else sequential).append(elapsed)
            scans = []
            for _ in range(5):
                t0 = time.perf_counter()
                conn.execute("SELECT count(*) FROM chunks WHERE strpos(search_text, '梅雨') > 0").fetchone()
                scans.append(1000 * (time.perf_counter() - t0))
    return {
        "server": str(row[3]).split(" on ")[0],
        "chunks": row[0],
        "table_size": row[1],
        "trigram_index_size": row[2],
        "one_shot_recall_at_5_on_1145_paragraphs": recall,
        "load_seconds": round(load_seconds, 1),
        "entries_with_a_3plus_character_term": percentiles(indexed),
        "entries_of_1_2_character_terms_only": percentiles(sequential),
        "baseline_sequential_scan_one_term": percentiles(scans),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=80)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-bindir", type=Path)
    args = parser.parse_args()
    emit(run(args.copies, args.sample, args.seed, args.pg_bindir), None)


if __name__ == "__main__":
    main()
