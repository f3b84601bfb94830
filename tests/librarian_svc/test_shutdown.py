"""Graceful shutdown of the real process: SIGTERM stops new connections; in-flight requests finish or answer TIMEOUT.

Cloud Run sends SIGTERM and kills the instance 10 s later (DESIGN.md §7). The service is pointed
at a loopback fake LLM that answers after a delay, so a think request is provably still running
when the signal arrives; `tests.support.spin_service` adds a route that keeps the event loop busy
on the CPU. Every case runs with one worker and with two (`WEB_CONCURRENCY`): the signal then goes
to the supervising parent, as Cloud Run sends it to PID 1.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from librarian_svc import drain
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.support.live_service import LiveService

pytestmark = [pytest.mark.live, pytest.mark.slow]

LLM_DELAY_S = 2.0
CLOUD_RUN_KILL_AFTER_S = 10.0
DECISION = json.dumps(
    {
        "sufficient": True,
        "missing": [],
        "selected": [],
        "queries_text": [],
        "queries_vector": [],
        "rationale": "",
        "coverage_notes": "",
    }
)


def think_request() -> dict[str, Any]:
    """A first call that already carries a round of hits, so the step consults the model."""
    hits = [
        {
            "document_id": f"doc-{i}",
            "page": i,
            "chunk_id": f"doc-{i}#0",
            "snippet": f"富士山の標高は3776メートルで、日本で最も高い山である。段落 {i}。",
            "score": 10.0 - i,
            "retrieval": "text",
            "metadata": {},
        }
        for i in range(5)
    ]
    return {
        "request_id": "shutdown-1",
        "user_query": "富士山の標高は何メートルですか?",
        "subject_id": "subject-1",
        "search_history": [{"queries_text": ["富士山 標高"], "queries_vector": [], "results": hits}],
        "state": None,
    }


def wait_for(condition: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def connection_fails(base_url: str) -> bool:
    """True when a fresh connection to the service cannot get an answer."""
    try:
        with httpx.Client(timeout=0.5) as client:
            client.get(f"{base_url}/health")
    except httpx.TransportError:
        return True
    return False


WORKERS = ["1", "2"]
READY_TIMEOUT_S = 90.0  # the machine running the suite may be busy: a start-up is not what these tests time


@pytest.mark.parametrize("workers", WORKERS)
def test_sigterm_drains_in_flight_request_and_refuses_new_ones(
    start_live_service: Callable[..., LiveService], workers: str
) -> None:
    with FakeLLMServer(default_reply=Reply(content=DECISION, delay_s=LLM_DELAY_S)) as llm:
        service = start_live_service(
            {
                "LLM_PROVIDER": "openai-compatible",
                "OPENAI_BASE_URL": llm.url,
                "LLM_MODEL": "fake",
                "LLM_MAX_RETRIES": "0",
                "LLM_TIMEOUT_MS": "8000",
                "SHUTDOWN_GRACE_S": "8",
                "WEB_CONCURRENCY": workers,
            },
            ready_timeout=READY_TIMEOUT_S,
        )
        with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=15.0) as client:
            in_flight = pool.submit(client.post, f"{service.base_url}/agent/librarian/think", json=think_request())
            assert wait_for(lambda: bool(llm.chat_requests), timeout=5.0), service.logs()

            signalled = time.monotonic()
            service.process.send_signal(signal.SIGTERM)

            # The listener closes at once; the in-flight request is still waiting on the model.
            assert wait_for(lambda: connection_fails(service.base_url), timeout=2.0, step=0.05), service.logs()
            assert not in_flight.done(), "the request finished before shutdown was observed; raise LLM_DELAY_S"

            response = in_flight.result(timeout=CLOUD_RUN_KILL_AFTER_S)
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["request_id"] == "shutdown-1"
            assert body["action"] == "COMPLETE", body

            remaining = CLOUD_RUN_KILL_AFTER_S - (time.monotonic() - signalled)
            status = service.process.wait(timeout=max(remaining, 0.1))
            assert time.monotonic() - signalled < CLOUD_RUN_KILL_AFTER_S
            # A clean exit, not "killed by SIGTERM" (uvicorn re-raises the signal after draining).
            assert status == 0, service.logs()
        assert len(llm.chat_requests) == 1
    assert "Traceback" not in service.logs()


def log_lines(service: LiveService) -> list[dict[str, Any]]:
    """The service's JSON log lines (anything else it printed is left out)."""
    return [json.loads(line) for line in service.logs().splitlines() if line.startswith("{")]


@pytest.mark.parametrize("workers", WORKERS)
def test_a_step_waiting_on_the_model_answers_timeout_with_its_state(
    start_live_service: Callable[..., LiveService], workers: str
) -> None:
    """The model answers long after the grace period: the step answers TIMEOUT with the state it was sent, not a 500."""
    grace_s = 2.0
    with FakeLLMServer(default_reply=Reply(content=DECISION)) as llm:
        service = start_live_service(
            {
                "LLM_PROVIDER": "openai-compatible",
                "OPENAI_BASE_URL": llm.url,
                "LLM_MODEL": "fake",
                "LLM_MAX_RETRIES": "0",
                "LLM_TIMEOUT_MS": "40000",
                "REQUEST_TIMEOUT_MS": "45000",
                "SHUTDOWN_GRACE_S": str(grace_s),
                "WEB_CONCURRENCY": workers,
            },
            ready_timeout=READY_TIMEOUT_S,
        )
        opening = think_request() | {"search_history": []}  # no hits yet: the step answers SEARCH with a state
        first = httpx.post(f"{service.base_url}/agent/librarian/think", json=opening, timeout=15.0).json()
        assert first["action"] == "SEARCH", first
        second = think_request() | {"state": first["state"], "request_id": "shutdown-2"}
        second["search_history"][0]["queries_text"] = first["queries_text"]
        llm.default_reply = Reply(content=DECISION, delay_s=30.0)  # from now on the model is slow
        calls_before = len(llm.chat_requests)
        with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=15.0) as client:
            in_flight = pool.submit(client.post, f"{service.base_url}/agent/librarian/think", json=second)
            assert wait_for(lambda: len(llm.chat_requests) > calls_before, timeout=5.0), service.logs()
            signalled = time.monotonic()
            service.process.send_signal(signal.SIGTERM)
            response = in_flight.result(timeout=CLOUD_RUN_KILL_AFTER_S)
            answered_after = time.monotonic() - signalled
            status = service.process.wait(timeout=CLOUD_RUN_KILL_AFTER_S)
            exited_after = time.monotonic() - signalled
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["action"] == "ERROR", body
    assert body["error_type"] == "TIMEOUT"
    assert body["state"] == first["state"]  # retry the step elsewhere, as it was
    assert body["request_id"] == "shutdown-2"
    assert "shutting down" in body["message"]
    assert answered_after <= grace_s + 0.5, answered_after  # the parent's relay adds at most a tick
    assert exited_after < CLOUD_RUN_KILL_AFTER_S
    assert status == 0, service.logs()
    logs = service.logs()
    assert "Traceback" not in logs
    assert "CancelledError" not in logs
    # `/ready` answers 503 while the instance starts (with two workers, until both serve): not an error.
    errors = [line for line in log_lines(service) if line.get("status", 0) >= 500 and line.get("path") != "/ready"]
    assert not errors


def start_spin_service(start: Callable[..., LiveService], workers: str, grace_s: float) -> LiveService:
    env = {"SHUTDOWN_GRACE_S": str(grace_s), "REQUEST_TIMEOUT_MS": "60000", "WEB_CONCURRENCY": workers}
    return start(env, module="tests.support.spin_service", ready_timeout=READY_TIMEOUT_S)


@pytest.mark.parametrize("workers", WORKERS)
def test_a_cpu_bound_step_stops_at_the_shutdown_deadline(
    start_live_service: Callable[..., LiveService], workers: str
) -> None:
    """CPU work on the event loop that checks its deadline ends for the shutdown, well before its own budget."""
    grace_s = 2.0
    service = start_spin_service(start_live_service, workers, grace_s)
    with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=15.0) as client:
        in_flight = pool.submit(client.post, f"{service.base_url}/test/spin", params={"check": "true"})
        time.sleep(0.5)  # well inside the spin: it would run for 60 s
        signalled = time.monotonic()
        service.process.send_signal(signal.SIGTERM)
        response = in_flight.result(timeout=CLOUD_RUN_KILL_AFTER_S)
        answered_after = time.monotonic() - signalled
        status = service.process.wait(timeout=CLOUD_RUN_KILL_AFTER_S)
        exited_after = time.monotonic() - signalled
    assert response.status_code == 200, response.text
    assert response.json()["stopped"] == "deadline"
    assert grace_s - 1.0 <= answered_after <= grace_s + 0.5, answered_after
    assert exited_after <= grace_s + 1.5, exited_after
    assert status == 0, service.logs()


@pytest.mark.parametrize("workers", WORKERS)
def test_a_step_deaf_to_its_deadline_cannot_keep_the_process_past_cloud_runs_kill(
    start_live_service: Callable[..., LiveService], workers: str
) -> None:
    """Code that neither awaits nor checks its deadline: the watchdog ends the worker, before Cloud Run's SIGKILL.

    A fractional grace is kept as it is: rounded up for uvicorn, 2.2 s moved the watchdog to 3.5 s.
    """
    grace_s = 2.2
    service = start_spin_service(start_live_service, workers, grace_s)
    with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=15.0) as client:
        pool.submit(client.post, f"{service.base_url}/test/spin", params={"check": "false", "seconds": "30"})
        time.sleep(0.5)
        signalled = time.monotonic()
        service.process.send_signal(signal.SIGTERM)
        service.process.wait(timeout=CLOUD_RUN_KILL_AFTER_S)
        exited_after = time.monotonic() - signalled
    assert exited_after < grace_s + drain.FORCED_EXIT_MARGIN_S + 0.4, exited_after  # + the relay and the exit
    assert "shutdown overran its grace period" in service.logs()
