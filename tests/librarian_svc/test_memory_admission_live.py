"""Admission at the door against the real process: requests queued for memory are neither cut off nor lost.

A queued request's body is unread on purpose (it waits in the kernel), so the read timeout, which closes
connections whose request does not arrive in time, must not count the wait. The worker is started with a
read timeout far shorter than the queue, and a budget that lets one heavy request in at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.live_service import LiveService
from tests.support.raw_http import connect, read_response

pytestmark = [pytest.mark.live, pytest.mark.slow]

READ_TIMEOUT_S = 0.3
QUEUED = 6


def _budgeted_service(factory: pytest.TempPathFactory, read_timeout_s: float) -> Iterator[LiveService]:
    """A worker whose 16 MB budget lets one heavy request in at a time, with this read timeout."""
    from tests.support.live_service import start_service

    service = start_service(
        {"WORKER_MEMORY_BUDGET_MB": "16", "REQUEST_READ_TIMEOUT_S": str(read_timeout_s), "LOG_LEVEL": "info"},
        log_dir=factory.mktemp("admission"),
    )
    yield service
    service.stop()


@pytest.fixture(name="service", scope="module")
def fixture_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    yield from _budgeted_service(tmp_path_factory, READ_TIMEOUT_S)


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


WINDOW_S = 2.0
"""The second service's read timeout: long enough for the schedule below to hold on a busy machine."""


@pytest.fixture(name="windowed_service", scope="module")
def fixture_windowed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    yield from _budgeted_service(tmp_path_factory, WINDOW_S)


def _head(body: bytes) -> bytes:
    return (
        b"POST /agent/ace/search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )


def test_a_request_admitted_late_in_its_window_gets_a_whole_window_for_its_body(
    windowed_service: LiveService,
) -> None:
    """Admitted just before its read window would close, a request's body still has a whole window to arrive.

    The schedule (window 2 s): A takes the whole budget and sends its body until 1.7 s, so it is answered,
    and B admitted, at about 1.8 s. B connected at 0.1 s, so its window, restarted every 2 s while it
    waits, would close at 2.1 s; the rest of B's body arrives at 2.6 s, well within a window counted from its
    admission (3.8 s). Cutting B's connection at 2.1 s was the bug: under load a queued request's body,
    read only after admission, could be cut off (a CI run of the 0.3 s test above hit it).
    """
    first, second = _search(100), _search(101)
    with connect(windowed_service) as a, connect(windowed_service) as b:
        started = time.monotonic()
        a.sendall(_head(first))
        pieces = 8
        step = len(first) // pieces + 1
        time.sleep(0.1)
        b.sendall(_head(second) + second[: len(second) // 2])
        for index in range(pieces):  # A's body until 1.7 s: A holds the budget that long
            a.sendall(first[index * step : (index + 1) * step])
            time.sleep(max(0.0, 0.2 + index * 0.2 - (time.monotonic() - started)))
        answer_a = read_response(a)
        time.sleep(max(0.0, 2.6 - (time.monotonic() - started)))
        b.sendall(second[len(second) // 2 :])
        answer_b = read_response(b)
    assert answer_a.startswith(b"HTTP/1.1 200")
    assert answer_b.startswith(b"HTTP/1.1 200"), answer_b[:300]
    assert "request not read in time" not in windowed_service.logs()
