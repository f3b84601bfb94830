"""The collector is paused only while the process starts: on again before serving, also after a failed start.

And while serving, requests in flight together do not set it off: their live objects are what the young
generation's count measures, and collecting them finds nothing.
"""

from __future__ import annotations

import gc
import textwrap
from collections.abc import Iterator

import pytest

from librarian_svc.startup_gc import SERVING_THRESHOLDS, collector_paused
from tests.support.fresh_interpreter import last_json_line
from tests.support.live_service import PROJECT_ROOT


@pytest.fixture
def collector_on() -> Iterator[None]:
    """Every test starts with the collector on and leaves it as pytest had it, whatever the test did."""
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_paused_inside_the_block_and_on_again_after() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_on_again_when_start_up_fails() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("start-up failed")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.live
def test_the_service_serves_with_the_collector_on_and_the_start_up_heap_frozen() -> None:
    """`python -m librarian_svc` (one worker) up to serving: uvicorn builds the app, then reports instead of serving."""
    script = textwrap.dedent(
        """
        import gc, json, sys
        import uvicorn
        collections = []
        gc.callbacks.append(lambda phase, info: collections.append(info["generation"]) if phase == "start" else None)
        def report(self, sockets=None):
            self.config.load()  # what Server.run does first: import the factory and build the app
            print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                              "threshold": gc.get_threshold(), "collections_during_start_up": len(collections)}))
        uvicorn.Server.run = report
        from librarian_svc.__main__ import main
        sys.exit(main())
        """
    )
    state = last_json_line(
        script,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(PROJECT_ROOT),
            "LLM_PROVIDER": "heuristic",
            "WEB_CONCURRENCY": "1",
        },
        timeout=60,
        exit_status=3,  # "did not start": the stand-in for Server.run never serves
    )
    assert state["enabled"]
    assert state["collections_during_start_up"] == 0
    # The app, its dependencies and the compiled graphs: far more than the few thousand objects of a bare interpreter.
    assert state["frozen"] > 50_000
    assert tuple(state["threshold"]) == SERVING_THRESHOLDS


def test_eight_librarian_steps_in_flight_together_make_no_young_collection() -> None:
    """Eight three-round (161 KB) think steps at once, in a fresh interpreter set up as a serving worker.

    At the previous threshold (10,000) this made a young collection every few batches, as 8 connections
    over HTTP did every 7-9 steps: each walked the steps' live objects and freed nothing (`startup_gc`).
    """
    script = textwrap.dedent(
        """
        import asyncio, gc, json
        import uvloop
        from bench.librarian_throughput import THINK_PATH, build_payload
        from bench.step_breakdown import asgi_post
        from librarian_svc.app import create_app
        from librarian_svc.startup_gc import prepare_collector_for_serving

        body, _ = build_payload()
        young = []

        def count(phase, info):
            if phase == "start" and info["generation"] == 0:
                young.append(1)

        gc.callbacks.append(count)

        async def main():
            app = create_app()
            await asgi_post(app, THINK_PATH, body)
            prepare_collector_for_serving()
            young.clear()
            answers = []
            for _ in range(4):
                answers += await asyncio.gather(*[asgi_post(app, THINK_PATH, body) for _ in range(8)])
            actions = sorted({json.loads(answer)["action"] for _, answer in answers})
            print(json.dumps({"statuses": sorted({status for status, _ in answers}), "actions": actions,
                              "young_collections": len(young)}))

        uvloop.run(main())
        """
    )
    report = last_json_line(
        script, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "heuristic"}
    )
    assert report == {"statuses": [200], "actions": ["COMPLETE"], "young_collections": 0}
