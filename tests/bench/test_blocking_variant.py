"""The concurrency benchmark's blocking contrast really holds the event loop for the whole model call."""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
import pytest
import uvloop

import graphs.llm.unobserved_call as unobserved_call
from bench.blocking_variant import blocking_reply, patch_blocking
from bench.librarian_concurrency import QUESTION, start_fake_model
from bench.model_step_cpu import THINK_PATH, settings_env
from bench.step_breakdown import asgi_post
from librarian_svc.app import create_app
from librarian_svc.settings import load_settings

MODEL_S = 0.3
"""How long the fake model waits before it answers."""


@contextmanager
def heap_frozen_as_served() -> Iterator[None]:
    """The test process's heap moved out of the collector's reach for the block, as the service's is when it serves.

    The service freezes its start-up heap (`librarian_svc.startup_gc`), so its full collections scan only what
    serving made. Late in a suite run, the pytest process holds the objects of thousands of tests: a full
    collection of that heap took 0.15-0.35 s, and one landing inside the step was a stall of the test
    process, not of the service (seen once, 0.396 s, in session 18; a `gc.callbacks` log of a suite run
    found a 0.31 s collection inside this test).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def longest_stall_during_a_step(url: str) -> float:
    """The longest the event loop went without running a 5 ms ticker while the service ran one model-backed step."""

    async def run() -> float:
        app = create_app(load_settings(settings_env(url)))
        body = msgspec.json.encode({"request_id": "b1", "user_query": QUESTION, "subject_id": "bench"})
        longest, stepping = 0.0, True

        async def ticker() -> None:
            nonlocal longest
            last = time.monotonic()
            while stepping:
                await asyncio.sleep(0.005)
                now = time.monotonic()
                longest, last = max(longest, now - last), now

        async with app.lifespan():
            ticking = asyncio.create_task(ticker())
            await asyncio.sleep(0.02)
            status, payload = await asgi_post(app, THINK_PATH, body)
            stepping = False
            await ticking
        answer = json.loads(payload)
        assert (status, answer["action"], answer["usage"]["llm_calls"]) == (200, "SEARCH", 1)
        return longest

    with heap_frozen_as_served(), asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(run())


def test_the_service_waits_for_the_model_without_holding_the_loop_and_the_contrast_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    process, url = start_fake_model(MODEL_S * 1000)
    try:
        free = longest_stall_during_a_step(url)
        monkeypatch.setattr(unobserved_call, "reply", unobserved_call.reply)  # restored after the test
        patch_blocking()
        assert unobserved_call.reply is blocking_reply
        held = longest_stall_during_a_step(url)
    finally:
        process.terminate()
        process.wait()
    assert free < MODEL_S / 2
    assert held >= MODEL_S * 0.9
