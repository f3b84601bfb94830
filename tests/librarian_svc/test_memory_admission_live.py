"""Admission at the door against the real process: requests queued for memory are neither cut off nor lost.

A queued request's body is unread on purpose (it waits in the kernel), so the read timeout, which closes
connections whose request does not arrive in time, must not count the wait. The worker is started with a
read timeout far shorter than the queue, and a budget that lets one heavy request in at a time. Once admitted,
a body must keep pace with `MIN_BODY_RATE_KB_S` (`librarian_svc/body_window.py`): the later tests trickle,
frame and hold bodies back against services with a low rate.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from librarian_svc.body_window import BODY_GRACE_S, CHECK_EVERY_S
from tests.support.live_service import LiveService
from tests.support.raw_http import connect, read_response, send_slowly

pytestmark = [pytest.mark.live, pytest.mark.slow]

READ_TIMEOUT_S = 0.3
QUEUED = 6
SLACK_S = 2.0  # scheduling on a busy machine


def _budgeted_service(factory: pytest.TempPathFactory, read_timeout_s: float) -> Iterator[LiveService]:
    """A worker whose 16 MB budget lets one heavy request in at a time, with this read timeout and no body rate
    (these tests are about the read timeout)."""
    from tests.support.live_service import start_service

    env = {
        "WORKER_MEMORY_BUDGET_MB": "16",
        "REQUEST_READ_TIMEOUT_S": str(read_timeout_s),
        "MIN_BODY_RATE_KB_S": "0",
        "LOG_LEVEL": "info",
    }
    service = start_service(env, log_dir=factory.mktemp("admission"))
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


RATE_KB_S = 100.0
"""The third service's `MIN_BODY_RATE_KB_S`: a 400 KB body that keeps pace arrives within 2 s + 4 s."""


@pytest.fixture(name="rated_service", scope="module")
def fixture_rated_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """One worker with a 16 MB budget and 100 KB/s, and a route that holds its event loop
    (`tests.support.spin_service`), with `WORKER_HUNG_AFTER_S` long enough that the supervisor does not replace a
    worker held for 5 s."""
    from tests.support.live_service import start_service

    env = {
        "WORKER_MEMORY_BUDGET_MB": "16",
        "MIN_BODY_RATE_KB_S": str(RATE_KB_S),
        "WEB_CONCURRENCY": "1",
        "WORKER_HUNG_AFTER_S": "30",
    }
    service = start_service(env, log_dir=tmp_path_factory.mktemp("rated"), module="tests.support.spin_service")
    yield service
    service.stop()


def _cut_off_and_queue_served(service: LiveService, start: bytes, trickle: Callable[[socket.socket], bytes]) -> None:
    """A heavy request opened with `start` and fed by `trickle` is cut off with 408 soon after the grace, and a
    heavy search queued behind it is served right after: it no longer waits for the read timeout and a 503."""
    with connect(service) as slow:
        started = time.monotonic()
        slow.sendall(start)
        with ThreadPoolExecutor(1) as pool:
            time.sleep(0.3)  # the slow one is admitted first
            queued = pool.submit(_post_timed, service, _search(301))
            cut = trickle(slow)
            cut_after = time.monotonic() - started
            status, queued_after = queued.result()
    assert cut.startswith(b"HTTP/1.1 408"), cut[:300]
    error = json.loads(cut.partition(b"\r\n\r\n")[2])
    assert (error["action"], error["error_type"]) == ("ERROR", "INVALID_INPUT")
    assert "MIN_BODY_RATE_KB_S" in error["message"]
    assert BODY_GRACE_S <= cut_after <= BODY_GRACE_S + CHECK_EVERY_S + SLACK_S
    assert status == 200
    assert queued_after <= BODY_GRACE_S + SLACK_S + 5.0, "the queued request waited well past the slow body's cut"
    access = [json.loads(line) for line in service.logs().splitlines() if '"latency_ms"' in line]
    assert error["request_id"] in {line["request_id"] for line in access if line["status"] == 408}


def test_a_heavy_body_sent_slower_than_the_minimum_rate_is_cut_off_and_the_queue_behind_it_served(
    rated_service: LiveService,
) -> None:
    """A client that declares a heavy body and trickles it (4 KB/s against 100 KB/s) held the whole budget for
    the read timeout (30 s), longer than the request queued behind it may wait (25 s), which got the 503."""
    body = _search(300)
    _cut_off_and_queue_served(
        rated_service, _head(body) + body[:1000], lambda sock: send_slowly(sock, body[1000:], 1000, 0.25)
    )


def test_a_chunked_body_is_timed_by_its_body_bytes_not_its_framing(rated_service: LiveService) -> None:
    """One body byte per chunk: about 60 KB/s on the wire, 10 KB/s of body. Counting the wire's bytes kept such a
    trickle alive for the read timeout; the body's own bytes are what must keep pace."""
    head = (
        b"POST /agent/ace/search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    body = _search(305)

    def trickle(sock: socket.socket) -> bytes:
        framed = b"".join(b"1\r\n" + body[i : i + 1] + b"\r\n" for i in range(len(body)))
        return send_slowly(sock, framed, 6_000, 0.1)

    _cut_off_and_queue_served(rated_service, head, trickle)


def test_a_heavy_body_sent_faster_than_the_minimum_rate_is_served(rated_service: LiveService) -> None:
    """The same body at about 133 KB/s (the minimum is 100), over three seconds: past the 2 s grace, so the rate
    is applied all along, and the body keeps pace."""
    body = _search(302)
    with connect(rated_service) as sock:
        started = time.monotonic()
        sock.sendall(_head(body))
        answer = send_slowly(sock, body, 13_300, 0.1)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert time.monotonic() - started > 2.5, "sent within the grace: the rate was never applied"


def _post_timed(service: LiveService, body: bytes) -> tuple[int, float]:
    """The status of one ACE search and the seconds it took."""
    started = time.monotonic()
    with httpx.Client(base_url=service.base_url, timeout=60.0) as client:
        answer = client.post("/agent/ace/search", content=body, headers={"content-type": "application/json"})
    return answer.status_code, time.monotonic() - started


def test_a_client_held_back_while_the_worker_was_busy_is_not_cut_off_while_it_keeps_the_rate(
    rated_service: LiveService,
) -> None:
    """A client sends a 400 KB body at 200 KB/s, twice the minimum. Half a second in, the worker's event loop is
    held for 5 s, and the client is held back meanwhile (TCP would do it once the buffers fill; here the client
    waits for the stall to end, so the test does not hang on how much the kernel buffers). Counted from the
    admission it falls far behind the rate, but the stall was the worker's (the look due during it came 5 s
    late), so it is served. Cutting it off was the bug."""
    body = _search(304)
    window_s = 2.0 + len(body) / (RATE_KB_S * 1000)
    piece, every_s = 20_000, 0.1
    with connect(rated_service) as sock, ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        sock.sendall(_head(body))
        stall = None
        for start in range(0, len(body), piece):
            if stall is None and time.monotonic() - started >= 0.5:
                stall = pool.submit(
                    httpx.post, f"{rated_service.base_url}/test/spin?check=false&seconds=5", timeout=30.0
                )
                assert stall.result().status_code == 200  # held back until the loop runs again
            sock.sendall(body[start : start + piece])
            time.sleep(every_s)
        answer = read_response(sock)
        answered_after = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert answered_after > window_s, "the body kept pace without the stall's credit: nothing was tested"


def _small_heavy_search() -> bytes:
    """About 20 KB: heavy for ACE (a 2 MB estimate), so the door has its body timed by the rate."""
    bullets = [{"id": f"g-{i}", "section": "general", "content": f"lesson {i} " + "word " * 36} for i in range(100)]
    return json.dumps({"query": {"query_text": "lesson word"}, "playbook": {"bullets": bullets}}).encode()


def _answered_early(sock: socket.socket) -> None:
    """A heavy request the app answers before reading its body (415: not JSON), admitted with its body still
    coming (so its window runs); the rest of the body follows the answer, and the connection is kept."""
    body = _small_heavy_search()
    sock.sendall(_head(body).replace(b"application/json", b"text/plain") + body[:1000])
    assert read_response(sock).startswith(b"HTTP/1.1 415")
    sock.sendall(body[1000:])


def test_a_window_ends_with_its_answer_and_does_not_time_the_connection_after_it(rated_service: LiveService) -> None:
    """A heavy request answered early had its body's timer still running on the kept-alive connection: it then
    sent an unsolicited 408 on the idle connection, and cut off the next request there (sent over 3 s, well
    within its own read timeout of 30 s)."""
    with connect(rated_service) as idle:
        _answered_early(idle)
        assert select.select([idle], [], [], 3.5)[0] == [], idle.recv(300)
    light = json.dumps({"request_id": "next-on-connection", "query": "x" * 2000}).encode()
    head = (
        b"POST /agent/grace/step HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(light)).encode() + b"\r\n\r\n"
    )
    with connect(rated_service) as reused:
        _answered_early(reused)
        reused.sendall(head)
        answer = send_slowly(reused, light, 200, 0.3)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
