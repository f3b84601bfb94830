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

Serving then collects the youngest generation once 100,000 more container objects are alive than at the last
collection, instead of 700. That count is allocations minus deallocations, and a request frees nearly
everything it allocates by reference counting: one three-round Librarian step (161 KB) at a time sets off at
most one young collection in 8 s of steps. What sets them off is concurrency: the requests in flight hold
their objects, so the count climbs with how many are in flight, and each collection walks them all, finds
nothing and promotes them to be walked again by the older generations. Eight such steps at once (one worker, 8
connections over HTTP, `gc.callbacks` in the worker, session 26) hold between 10,000 and 50,000 objects: at a
threshold of 10,000 the worker made 64-99 young collections in 8 s (one every 7-9 steps), 0.25-0.68 ms of
collector time a step, and they freed **no object** (the two runs that counted); at 50,000 or 100,000 it made
none. So the collector's time is gone from the step, 2-6 % of its CPU; the throughput benchmarks did not
resolve it from this VM's noise (`bench.versus_tree --base` the tree before, paired: the Librarian ×1.11 and
×1.00 in two runs, GRACE ×1.09 and ×1.14; the Advisor, which makes no collection at either threshold, ×0.91,
×0.92 and ×1.28). 100,000 leaves room for the ~65,000 objects of the 130 model-backed steps a worker holds at
256 sessions (session 15). The price would be garbage cycles waiting longer, and there are few: 160 of the
heaviest ACE searches at once peaked at 1,225 and 1,247 MB against 1,240 and 1,191 MB before the change
(`bench.memory_admission --skip-single --skip-baseline`, two runs each), and each older generation is still
collected after every 10 collections of the one below.

At 256 sessions on two workers (session 15, a young collection every 10,000) each young collection
found nothing and still took 20-40 ms: the young generation held the ~130 requests in flight on the worker
(~65,000 objects, ~500 each: coroutine frames, LangGraph channels, the SDK's request options). No
threshold moved that benchmark beyond its noise (`bench.librarian_concurrency --workers 2 --concurrency 256`,
alternating runs of a tree timing its collections; it runs close to the two cores' limit, session 27 found,
so its noise is the VM's): with the collector off for the whole run the bound's share was 0.952 / 0.944 /
0.931 against 0.937 / 0.953 / 0.925 at 10,000; at 700 allocations 0.878-0.919 and at 2,000 0.880 / 0.912,
against 0.867 / 0.913 in the same alternation.

With several workers (`WEB_CONCURRENCY`) each worker process does all of this for itself, in
`librarian_svc.workers.create_worker_app`, and reports it in its "worker ready" log line.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

SERVING_THRESHOLDS = (100_000, 10, 10)
"""`gc.set_threshold` while serving: net new container objects per young collection, then the default ratios."""


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
