"""The service with the Librarian thinking about the history's first few hits only: the floor of a think step.

`python -m bench.thinking_floor_variant` runs `librarian_svc` unchanged except that the Librarian builds
its candidate pool from the first `FLOOR_HITS` hits of the first round. Everything else of a think step
runs on the whole request as the service runs it: receiving, decoding and validating every hit, the
LangGraph run, the history's hash chain over every round, sealing the state, the answer. Assessment and
selection then see a handful of candidates, so they cost next to nothing.

`python -m bench.librarian_throughput --floor` loads it beside the service and the echo: its share of the
echo is what the Librarian could reach with thinking about the hits for free (issue 14 item 1 asks for
0.25 of the echo). Each worker's app factory (`APP_FACTORY`) applies the patch, so it holds with any
`WEB_CONCURRENCY`. Never used in production: its answers ignore most of the evidence.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import msgspec

import graphs.librarian.candidates as candidates

if TYPE_CHECKING:
    from litestar import Litestar

    from contracts.librarian import SearchRound
    from graphs.chunked import Chunked

MODULE = "bench.thinking_floor_variant"
APP_FACTORY = f"{MODULE}:create_app"
FLOOR_HITS = 5
"""Hits of the first round the floor's Librarian thinks about (a first round's worth: its step still completes)."""

_service_pool_steps = candidates.pool_steps


def first_hits_pool_steps(
    history: list[SearchRound], *, near_dup_threshold: float
) -> Chunked[candidates.CandidatePool]:
    """`candidates.pool_steps` over the first `FLOOR_HITS` hits of the history's first round only."""
    kept = [msgspec.structs.replace(history[0], results=history[0].results[:FLOOR_HITS])] if history else []
    return _service_pool_steps(kept, near_dup_threshold=near_dup_threshold)


def create_app() -> Litestar:
    """Each worker's app factory: the service's own, with the Librarian's pool cut to the first hits."""
    from librarian_svc.workers import create_worker_app

    candidates.pool_steps = first_hits_pool_steps
    return create_worker_app()


if __name__ == "__main__":
    from librarian_svc.__main__ import main

    sys.exit(main(APP_FACTORY))
