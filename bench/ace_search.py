"""ACE hybrid-search latency against the seed's design, same embedder, same run (issue 4's benchmark).

Playbooks: the real AppWorld playbooks (318 and 359 bullets, ../shared/data/ace-appworld/) and synthetic
ones of 1,000 and 10,000 bullets (real bullets recombined so every text is distinct). Per playbook:

- `seed`: seed 000 §5 as written: every query re-embeds every bullet (`HashingEmbeddings.embed_documents`,
  512 dimensions, no cache) and rebuilds `rank_bm25.BM25Okapi` over `str.split()` tokens;
- `cold`: this service's search with empty caches (bullets tokenised and embedded, index built);
- `warm`: this service's search with the playbook's index cached (what every later request costs).

Medians over the queries, in milliseconds; ratios are seed ÷ ours. Target (issue 4): warm on 10,000
bullets at least 20× faster than the seed's design; growth is the 10k ÷ 1k latency of each variant.

    python -m bench.ace_search [--output FILE]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from bench.tools import PROJECT_ROOT, emit, machine_info
from contracts.ace import Bullet, Playbook, SearchQuery
from graphs.ace.playbook.text_format import parse_playbook
from graphs.ace.search.hybrid import HybridSearch, min_max
from graphs.ace.search.index import IndexCache, search_text
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from librarian_svc.settings import ENV_DEFAULTS

ACE_DATA = PROJECT_ROOT.parent / "shared" / "data" / "ace-appworld"
DIM = 512
ALPHA = float(ENV_DEFAULTS["SEARCH_ALPHA"])
"""The service's default α (seed 000 §7), for both designs."""
TOP_K = 10
QUERIES = [
    "How do I get all items from a paginated API?",
    "approve a Venmo payment request when the balance is too low",
    "remove songs from the Spotify queue",
    "organise files into directories by creation date",
    "which API tells me about my friends and family",
    "verify the task is complete before calling complete_task",
    "parse dollar amounts from bill text files",
    "find the most played song in a playlist",
    "東京タワーの高さは何メートルですか",
    "send a message to my roommate on the phone app",
    "compute yesterday's date without hardcoding it",
    "sync contacts between platforms using email and phone number",
]
SEED_QUERIES_10K = 4
"""The seed's design takes seconds per query at 10,000 bullets; a few queries give a stable median."""


def load(name: str) -> Playbook:
    with (ACE_DATA / name).open(encoding="utf-8", newline="") as handle:
        return parse_playbook(handle.read())


def synthetic(size: int, source: Playbook, seed: int = 7) -> Playbook:
    """`size` distinct bullets: halves of two real bullets joined, plus a numbered tag."""
    rng = random.Random(seed)
    contents = [b.content for b in source.bullets]
    bullets = []
    for i in range(size):
        first, second = rng.sample(contents, 2)
        text = f"{first[: len(first) // 2]} {second[len(second) // 2 :]} (variant {i})"
        bullets.append(Bullet(id=f"syn-{i + 1:05d}", section=rng.choice(source.bullets).section, content=text))
    return Playbook(bullets=bullets)


class SeedDesign:
    """Seed 000 §5's HybridSearch, verbatim in behaviour: re-embed every bullet and rebuild BM25 per query."""

    def __init__(self, alpha: float = ALPHA) -> None:
        self.embedder = HashingEmbeddings(dim=DIM)
        self.alpha = alpha

    def search(self, query: SearchQuery, playbook: Playbook) -> list[tuple[Bullet, float]]:
        candidates = [b for b in playbook.bullets if b.confidence_score >= query.min_confidence]
        if not candidates:
            return []
        q = np.array(self.embedder.embed_query(query.query_text))
        docs = np.array(self.embedder.embed_documents([search_text(b) for b in candidates]))
        norms = np.linalg.norm(docs, axis=1) * np.linalg.norm(q)
        norms = np.where(norms == 0, 1, norms)
        vector = min_max(np.dot(docs, q) / norms)
        bm25 = min_max(
            np.asarray(BM25Okapi([search_text(b).split() for b in candidates]).get_scores(query.query_text.split()))
        )
        combined = self.alpha * vector + (1 - self.alpha) * bm25
        order = np.argsort(-combined, kind="stable")[: query.top_k]
        return [(candidates[i], float(combined[i])) for i in order]


def ours(cache: IndexCache) -> HybridSearch:
    return HybridSearch(
        CachedEmbeddings(HashingEmbeddings(dim=DIM), model=f"bench/{DIM}", max_entries=50_000),
        alpha=ALPHA,
        cache=cache,
    )


def median_ms(run: Callable[[str], object], queries: list[str]) -> float:
    times = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def measure(label: str, playbook: Playbook) -> dict[str, Any]:
    size = len(playbook.bullets)
    print(f"[bench] {label}: {size} bullets", file=sys.stderr, flush=True)

    def query(text: str) -> SearchQuery:
        return SearchQuery(query_text=text, top_k=TOP_K)

    seed = SeedDesign()
    seed_queries = QUERIES[:SEED_QUERIES_10K] if size > 5_000 else QUERIES
    seed_ms = median_ms(lambda q: seed.search(query(q), playbook), seed_queries)

    def cold(text: str) -> object:
        return ours(IndexCache()).search(query(text), playbook)  # fresh caches: embed + index every time

    cold_queries = QUERIES[:SEED_QUERIES_10K] if size > 5_000 else QUERIES
    cold_ms = median_ms(cold, cold_queries)

    warm_search = ours(IndexCache())
    for text in QUERIES:  # warm-up: build the index once, cache every query vector
        warm_search.search(query(text), playbook)
    warm_ms = median_ms(lambda q: warm_search.search(query(q), playbook), QUERIES * 3)
    return {
        "playbook": label,
        "bullets": size,
        "seed_design_ms": seed_ms,
        "cold_ms": cold_ms,
        "warm_ms": warm_ms,
        "ratio_seed_over_warm": round(seed_ms / warm_ms, 1),
        "ratio_seed_over_cold": round(seed_ms / cold_ms, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ace_search", description=__doc__)
    parser.add_argument("--output", type=Path, help="also write the JSON report here")
    args = parser.parse_args(argv)
    offline = load("appworld_offline_trained_no_gt_playbook.txt")
    online = load("appworld_online_trained_playbook.txt")
    rows = [
        measure("appworld_offline_trained_no_gt", offline),
        measure("appworld_online_trained", online),
        measure("synthetic_1k", synthetic(1_000, online)),
        measure("synthetic_10k", synthetic(10_000, online)),
    ]
    by_label = {row["playbook"]: row for row in rows}
    one_k, ten_k = by_label["synthetic_1k"], by_label["synthetic_10k"]
    report = {
        "benchmark": "ace_search",
        "command": "python -m bench.ace_search",
        "embedder": f"HashingEmbeddings(dim={DIM}), the same for every variant",
        "top_k": TOP_K,
        "rows": rows,
        "growth_1k_to_10k": {
            variant: round(ten_k[f"{variant}_ms"] / one_k[f"{variant}_ms"], 2)
            for variant in ("seed_design", "cold", "warm")
        },
        "ratio_seed_over_warm_10k": ten_k["ratio_seed_over_warm"],
        "meets_target_warm_10k_20x": ten_k["ratio_seed_over_warm"] >= 20,
        "machine": machine_info(),
    }
    emit(report, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
