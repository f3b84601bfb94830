"""Pause the cyclic garbage collector while the process starts, then set it up for serving.

Start-up imports some 1,500 modules and compiles the graphs: about 200,000 container objects, all of
which live as long as the process. With the collector on, every 700 allocations trigger a young
collection and the older generations are rescanned as they grow, ~340 collections that find almost
nothing (about 110 ms, an eighth of the cold start, measured with `gc.callbacks`). Paused, none run.

On success the objects are moved to the permanent generation (`gc.freeze()`, the pattern the `gc`
docs describe for servers) before the collector is switched back on, so the full collections that
serving triggers later do not rescan the start-up heap either. The price: the few cycles start-up
left unreachable (~1,400 objects, ~2 MB of RSS) are never freed, nor would a frozen cycle that became
garbage later (start-up builds only what the process keeps). Collecting them first would cost a full
collection (~100 ms) at start-up, most of what the pause saves.

Serving then collects the youngest generation every 10,000 allocations instead of every 700. A think
step through a LangChain chat model allocates thousands of short-lived objects, nearly all freed by
reference counting; at 700 the collector ran some 35 times a second under load for ~0.3 ms of CPU per
step and found next to nothing (`gc.callbacks`, 80 sessions, bench/librarian_concurrency.py). Cycles
are still collected, in batches.

At 256 sessions on two workers (session 15) each young collection found nothing and still took 20-40 ms:
the young generation held the ~130 requests in flight on the worker (~65,000 objects, ~500 each: coroutine
frames, LangGraph channels, the SDK's request options), because freeing older objects lowers the count
that triggers a collection while the requests' own objects pile up. No threshold moved the benchmark
(`bench.librarian_concurrency --workers 2 --concurrency 256`, alternating runs of a tree timing its
collections): with the collector off for the whole run the bound's share was 0.952 / 0.944 / 0.931
against 0.937 / 0.953 / 0.925 with these thresholds; at 700 allocations 0.878-0.919 and at 2,000
0.880 / 0.912, against 0.867 / 0.913 in the same alternation.

With several workers (`WEB_CONCURRENCY`) each worker process does all of this for itself, in
`librarian_svc.workers.create_worker_app`, and reports it in its "worker ready" log line.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

SERVING_THRESHOLDS = (10_000, 10, 10)
"""`gc.set_threshold` while serving: allocations per young collection, then the default ratios."""


def collections_so_far() -> int:
    """Collections of every generation since the process started (a start-up report compares two readings)."""
    return sum(generation["collections"] for generation in gc.get_stats())


def prepare_collector_for_serving() -> None:
    """The process is built and about to serve: freeze what exists, collect the young less often, switch on.

    Switched on here, not only when the pause ends: with one worker, the pause around serving ends
    only when the process stops.
    """
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
    gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector's previous state is restored on exit, error or not."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
