"""Admission at the door against the real process: requests queued for memory are neither cut off nor lost.

A queued request's body is unread on purpose (it waits in the kernel), so the read timeout, which closes
connections whose request does not arrive in time, must not count the wait. The worker is started with a
read timeout far shorter than the queue, and a budget that lets one heavy request in at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.live_service import LiveService

pytestmark = [pytest.mark.live, pytest.mark.slow]

READ_TIMEOUT_S = 0.3
QUEUED = 6


@pytest.fixture(name="service", scope="module")
def fixture_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    from tests.support.live_service import start_service

    service = start_service(
        {"WORKER_MEMORY_BUDGET_MB": "16", "REQUEST_READ_TIMEOUT_S": str(READ_TIMEOUT_S), "LOG_LEVEL": "info"},
        log_dir=tmp_path_factory.mktemp("admission"),
    )
    yield service
    service.stop()


def _search(seed: int) -> bytes:
    """About 400 KB: an estimate of 40 MB, over the whole 16 MB budget, so each runs alone."""
    bullets = [
        {"id": f"g-{i}", "section": "general", "content": f"lesson {seed} {i} " + "word " * 36} for i in range(2_000)
    ]
    body = {"query": {"query_text": "lesson word", "top_k": 5}, "playbook": {"bullets": bullets}}
    return json.dumps(body).encode()


def test_requests_queued_for_memory_past_the_read_timeout_are_all_served(service: LiveService) -> None:
    bodies = [_search(seed) for seed in range(QUEUED)]

    def send(body: bytes) -> tuple[int, str]:
        with httpx.Client(base_url=service.base_url, timeout=60.0) as client:
            answer = client.post("/agent/ace/search", content=body, headers={"content-type": "application/json"})
            return answer.status_code, answer.json()["action"]

    with ThreadPoolExecutor(QUEUED) as pool:
        answers = list(pool.map(send, bodies))
    assert answers == [(200, "RESULTS")] * QUEUED
    logs = service.logs()
    assert "request not read in time" not in logs
    access = [json.loads(line) for line in logs.splitlines() if line.startswith("{") and '"latency_ms"' in line]
    latencies = sorted(line["latency_ms"] for line in access if line.get("path") == "/agent/ace/search")
    assert latencies[-1] > 1000 * READ_TIMEOUT_S, "no request waited longer than the read timeout: nothing tested"
