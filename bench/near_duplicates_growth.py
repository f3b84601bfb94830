"""Cost growth of the Librarian's ingest (candidate pool and near-duplicates) at 1×, 10× and 100× input.

Issue 15 asks that no algorithm on the request path grow faster than its input. For each input shape,
`build_pool` (normalise, shingle, near-duplicate search, merge: the whole ingest node) runs on 1×,
10× and 100× as many hits; the report gives CPU seconds, CPU per hit and the pairs the near-duplicate
search compared, and `growth_1_to_100` (CPU at 100× ÷ CPU at 1×: 100 is linear, 10,000 quadratic).
Baseline, same run: the previous per-hit pool (each hit compared with every earlier candidate, kept as
the oracle of tests/graphs/librarian/test_candidate_pool_oracle.py) at 1× and 10× only, since at 100×
it runs for minutes.

Shapes:
- `jsquad`: the first 75 characters of one JSQuAD paragraph and of another (distinct texts, real
  language, beyond the corpus's 1,145 paragraphs); 40 → 4,000 hits.
- `shared_base_unique_tail`: a 1,000-character base shared by every hit plus a unique 200-character
  tail (Jaccard ≈ 0.7: passes a MinHash pre-filter, fails the exact check; issue 15's 1.26 MB at 100×);
  10 → 1,000 hits.
- `tiny`: 20 rounds of distinct tiny hits (issue 15's 20 × 2,000 at 100×); 20 × 20 → 20 × 2,000 hits.
- `same_statement_other_figures`: one sentence with a different number in each hit, so every pair is
  a near-duplicate that disagrees (the densest candidate buckets); 20 → 2,000 hits.

Also `step_ms`: one whole think step in-process (ASGI, embedded engine) on the throughput benchmark's
history at 1, 3 and 10 rounds of 100 hits, CPU milliseconds per step (median of repeats).

    python -m bench.near_duplicates_growth [--no-baseline] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from bench.librarian_throughput import THINK_PATH, build_payload
from bench.tools import JSQUAD, command_line, emit, log, machine_info
from contracts.librarian import SearchHit, SearchRound
from graphs.librarian.candidates import build_pool
from graphs.text.near_duplicates import NEAR_DUP_MAX_COMPARED
from reference_orchestrator.corpus import jsquad_chunks

MODULE = "bench.near_duplicates_growth"
THRESHOLD = 0.8
SCALES = (1, 10, 100)


def _hit(document_id: str, page: int, snippet: str) -> SearchHit:
    return SearchHit(document_id=document_id, page=page, chunk_id=f"{document_id}#{page}", snippet=snippet, score=1.0)


def jsquad(scale: int) -> list[SearchRound]:
    texts = [chunk.text for chunk, _ in jsquad_chunks(JSQUAD)]
    count = len(texts)
    # Real language, distinct snippets beyond the corpus size: the head of one paragraph and of another.
    hits = [
        _hit(f"p{k % count}", k // count, texts[k % count][:75] + texts[(k + 1 + k // count) % count][:75])
        for k in range(40 * scale)
    ]
    rounds = range(0, len(hits), 2_000)  # a round holds 2,000 hits at most
    return [SearchRound(queries_text=["q"], results=hits[start : start + 2_000]) for start in rounds]


def shared_base_unique_tail(scale: int) -> list[SearchRound]:
    rng = random.Random(15)
    base = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(1_000))
    hits = [
        _hit(f"d{i}", 0, base + "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(200)))
        for i in range(10 * scale)
    ]
    return [SearchRound(queries_text=["q"], results=hits)]


def tiny(scale: int) -> list[SearchRound]:
    return [
        SearchRound(queries_text=["q"], results=[_hit(f"r{r}", i, f"hit {r}-{i}") for i in range(20 * scale)])
        for r in range(20)
    ]


def same_statement_other_figures(scale: int) -> list[SearchRound]:
    hits = [_hit(f"d{i}", 0, f"東京タワーの高さは{i}メートルで、港区にある電波塔である。") for i in range(20 * scale)]
    return [SearchRound(queries_text=["q"], results=hits)]


SHAPES: dict[str, Callable[[int], list[SearchRound]]] = {
    "jsquad": jsquad,
    "shared_base_unique_tail": shared_base_unique_tail,
    "tiny": tiny,
    "same_statement_other_figures": same_statement_other_figures,
}


def cpu_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median CPU seconds of `run` (process time: the machine is shared, wall time would count others)."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return statistics.median(times)


def growth(baseline: bool) -> dict[str, Any]:
    from tests.graphs.librarian.test_candidate_pool_oracle import oracle_pool  # the previous algorithm

    shapes: dict[str, Any] = {}
    for name, make in SHAPES.items():
        rows = []
        for scale in SCALES:
            history = make(scale)
            hits = sum(len(r.results) for r in history)
            chars = sum(len(h.snippet) for r in history for h in r.results)
            pool = build_pool(history, near_dup_threshold=THRESHOLD)
            cpu = cpu_seconds(partial(build_pool, history, near_dup_threshold=THRESHOLD), 3 if scale < 100 else 1)
            row: dict[str, Any] = {
                "scale": scale,
                "hits": hits,
                "snippet_chars": chars,
                "candidates": len(pool.candidates),
                "pairs_compared": pool.near_dup_compared,
                "pairs_compared_bound": NEAR_DUP_MAX_COMPARED * hits,
                "cpu_s": round(cpu, 4),
                "cpu_us_per_hit": round(1e6 * cpu / hits, 2),
            }
            if baseline and scale < 100:
                old = oracle_pool(history, THRESHOLD)
                row["per_hit_baseline_cpu_s"] = round(
                    cpu_seconds(partial(oracle_pool, history, THRESHOLD), 1 if scale > 1 else 3), 4
                )
                row["per_hit_baseline_pairs_compared"] = old.comparisons
                row["same_candidates_as_baseline"] = len(old.candidates) == len(pool.candidates)
            rows.append(row)
            log(f"{name} x{scale}: {row}")
        shapes[name] = {
            "rows": rows,
            "growth_1_to_100": round(rows[-1]["cpu_s"] / max(rows[0]["cpu_s"], 1e-6), 1),
            "input_growth_1_to_100": round(rows[-1]["hits"] / rows[0]["hits"], 1),
        }
    return shapes


async def _step_cpu_ms(rounds: int, repeats: int) -> dict[str, Any]:
    from librarian_svc.app import create_app
    from librarian_svc.settings import load_settings

    body, question = build_payload(0, 150, rounds)
    app = create_app(load_settings())
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(transport=transport, base_url="http://librarian") as client:
        first = (await client.post(THINK_PATH, content=body, headers=headers)).json()
        assert first["action"] == "COMPLETE", first
        times = []
        for _ in range(repeats):
            started = time.process_time()
            await client.post(THINK_PATH, content=body, headers=headers)
            times.append(time.process_time() - started)
    return {
        "rounds": rounds,
        "bytes": len(body),
        "question": question,
        "cpu_ms": round(1e3 * statistics.median(times), 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-baseline", action="store_true", help="skip the previous per-hit pool (slow)")
    parser.add_argument("--step-repeats", type=int, default=15)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    from librarian_svc.log_setup import configure_logging

    configure_logging("console", "warning", stream=sys.stderr)
    shapes = growth(baseline=not args.no_baseline)
    steps = [asyncio.run(_step_cpu_ms(rounds, args.step_repeats)) for rounds in (1, 3, 10)]
    report = {
        "benchmark": "near_duplicates_growth",
        "command": command_line(MODULE, argv or []),
        "threshold": THRESHOLD,
        "shapes": shapes,
        "step_ms": steps,
        "step_growth_1_to_10_rounds": round(steps[-1]["cpu_ms"] / steps[0]["cpu_ms"], 2),
        "machine": machine_info(),
    }
    emit(report, args.output)


if __name__ == "__main__":
    main()
