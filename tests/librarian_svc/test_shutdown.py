"""Graceful shutdown of the real process: SIGTERM stops new connections and lets in-flight requests finish.

Cloud Run sends SIGTERM and kills the instance 10 s later (DESIGN.md §7). The service is pointed
at a loopback fake LLM that answers after a delay, so a think request is provably still running
when the signal arrives.
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


def test_sigterm_drains_in_flight_request_and_refuses_new_ones(
    start_live_service: Callable[..., LiveService],
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
            }
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
