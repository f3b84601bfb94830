"""ACE curate's grow-and-refine cost at 1×, 10× and 100× input, against per-ADD re-embedding (issue 15.2).

Input: one section of N bullets and N/40 ADD deltas (200/5, 2,000/50, 20,000/500: the contract's largest
playbook with its largest delta list), a fifth of the ADDs near-duplicates of existing bullets. The
embedding cache is warm, as in a service that has seen the playbook before.

- `bounded`: `graphs.ace.curator.merge.merge` as the service runs it: the section embedded once, each
  ADD's candidates from a blocked matrix product, exact cosines for those only; `longest_block_ms` is the
  longest stretch between two checkpoints (how long the event loop could not serve anyone else);
- `per_add`: the design it replaces, reduced to its cost: for every ADD, embed the ADD and every bullet
  of its section through the same cache and take all cosines (what `_near_in_section` did).

Figures in milliseconds (wall and process CPU); `growth_*` is the 100× ÷ 10× time of each design.

    python -m bench.ace_curate [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

import structlog

from bench.tools import emit, machine_info
from contracts.ace import Bullet, DeltaContextItem, Playbook, PlaybookMetadata
from graphs.ace.curator.merge import merge
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.search.index import cosines, embed_texts
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from librarian_svc.settings import ENV_DEFAULTS

LEVELS = [(200, 5), (2_000, 50), (20_000, 500)]
THRESHOLD = float(ENV_DEFAULTS["ACE_DEDUP_THRESHOLD"])
RULES = SectionRules(dataset="default", definitions=(), permissive=True)
VOCABULARY = [f"w{i}" for i in range(3_000)]


def case(size: int, adds: int, seed: int = 7) -> tuple[Playbook, list[DeltaContextItem]]:
    """A playbook of `size` distinct bullets and `adds` ADDs, every fifth a near-copy of a bullet."""
    rng = random.Random(seed)

    def text() -> str:
        return "Use " + " ".join(rng.choice(VOCABULARY) for _ in range(14)) + "."

    bullets = [Bullet(id=f"general-{i:05d}", section="general", content=text()) for i in range(1, size + 1)]
    deltas = [
        DeltaContextItem(
            type="ADD",
            section="general",
            content=bullets[rng.randrange(size)].content[:-1] + " w1." if k % 5 == 0 else text(),
        )
        for k in range(adds)
    ]
    return Playbook(metadata=PlaybookMetadata(last_bullet_number=size), bullets=bullets), deltas


async def bounded(playbook: Playbook, deltas: list[DeltaContextItem], embeddings: CachedEmbeddings) -> dict[str, float]:
    """The service's merge, with the longest stretch between checkpoints."""
    budget = GapBudget()
    wall, cpu = time.perf_counter(), time.process_time()
    await merge(playbook, deltas, rules=RULES, embeddings=embeddings, dedup_threshold=THRESHOLD, budget=budget)
    await budget.checkpoint()
    return {
        "wall_ms": round((time.perf_counter() - wall) * 1000, 1),
        "cpu_ms": round((time.process_time() - cpu) * 1000, 1),
        "longest_block_ms": round(max(budget.gaps) * 1000, 1),
    }


class GapBudget:
    """No deadline; records the time between checkpoints (how long the event loop could serve nobody else)."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self.last = time.perf_counter()

    def check_deadline(self) -> None:
        """Never raises."""

    async def checkpoint(self) -> None:
        """Record the gap since the last checkpoint, then yield."""
        now = time.perf_counter()
        self.gaps.append(now - self.last)
        self.last = now
        await asyncio.sleep(0)


async def per_add(playbook: Playbook, deltas: list[DeltaContextItem], embeddings: CachedEmbeddings) -> dict[str, float]:
    """Per ADD: embed it with its whole section and take every cosine (the replaced design's cost)."""
    peers = [b.content for b in playbook.bullets]
    wall, cpu = time.perf_counter(), time.process_time()
    for delta in deltas:
        vectors = await embed_texts(embeddings, [delta.content.strip(), *peers])
        cosines(vectors[1:], vectors[0])
    return {
        "wall_ms": round((time.perf_counter() - wall) * 1000, 1),
        "cpu_ms": round((time.process_time() - cpu) * 1000, 1),
    }


async def measure() -> dict[str, Any]:
    """Both designs at each level, same embedder and warm cache."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    embeddings = CachedEmbeddings(HashingEmbeddings(dim=512), model="bench-curate", max_entries=60_000)
    levels: dict[str, Any] = {}
    warm_playbook, warm_deltas = case(50, 2, seed=1)  # first-call costs (BLAS start-up) are not the merge's
    await bounded(warm_playbook, warm_deltas, embeddings)
    for size, adds in LEVELS:
        playbook, deltas = case(size, adds)
        await embed_texts(embeddings, [b.content for b in playbook.bullets] + [d.content.strip() for d in deltas])
        levels[f"{size}_bullets_{adds}_adds"] = {
            "bounded": await bounded(playbook, deltas, embeddings),
            "per_add": await per_add(playbook, deltas, embeddings),
        }
    keys = list(levels)
    largest, middle = levels[keys[-1]], levels[keys[-2]]
    return {
        "benchmark": "ace_curate",
        "machine": machine_info(),
        "threshold": THRESHOLD,
        "levels": levels,
        "growth_bounded_100x_over_10x": round(largest["bounded"]["cpu_ms"] / middle["bounded"]["cpu_ms"], 1),
        "growth_per_add_100x_over_10x": round(largest["per_add"]["cpu_ms"] / middle["per_add"]["cpu_ms"], 1),
        "ratio_per_add_over_bounded_cpu_100x": round(largest["per_add"]["cpu_ms"] / largest["bounded"]["cpu_ms"], 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the JSON report (and write it to `--output`)."""
    parser = argparse.ArgumentParser(prog="python -m bench.ace_curate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    emit(asyncio.run(measure()), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
