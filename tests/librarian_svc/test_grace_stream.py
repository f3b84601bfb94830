"""`POST /agent/grace/step/stream`: the step's progress records as Server-Sent Events, live, then the action."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.common import ErrorResponse
from graphs.grace.run import SPEC
from librarian_svc.request_runner import Call, guarded
from tests.fakes.llm_server import FakeLLMServer, Reply, request_text
from tests.graphs.grace.helpers import (
    STEP,
    STREAM,
    STRONG_TOWER_HITS,
    TOWER_QUESTION,
    parse_sse,
)
from tests.support.context import make_context
from tests.support.live_service import LiveService
from tests.support.state_tokens import with_state_opened


def stream(client: TestClient[Litestar], body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    response = client.post(STREAM, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    assert [e["event"] for e in events[:-1]] == ["progress"] * (len(events) - 1)
    assert events[-1]["event"] == "action"
    for event in events[:-1]:
        assert int(event["id"]) == json.loads(event["data"])["index"]
    return [json.loads(e["data"]) for e in events[:-1]], json.loads(events[-1]["data"])


def test_the_stream_carries_the_same_records_and_body_as_the_plain_step(client: TestClient[Litestar]) -> None:
    first = {"request_id": "s-1", "query": TOWER_QUESTION}
    progress, action = stream(client, first)
    plain = client.post(STEP, json=first).json()
    assert with_state_opened(action) == with_state_opened(plain)  # the embedded engine is deterministic
    assert progress == plain["events"]
    second = {
        "request_id": "s-2",
        "state": action["state"],
        "tool_result": {"step_id": action["step_id"], "hits": STRONG_TOWER_HITS},
    }
    progress, final = stream(client, second)
    assert final["action"] == "COMPLETE"
    assert progress == final["events"]
    assert [p["index"] for p in progress] == list(range(len(plain["events"]), len(plain["events"]) + len(progress)))


def test_bad_input_is_refused_before_the_stream_starts(client: TestClient[Litestar]) -> None:
    response = client.post(STREAM, json={"request_id": "s", "tool_result": {"step_id": 1, "hits": []}})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error_type"] == "INVALID_INPUT"


def _plan(query: str) -> str:
    steps = [
        {"step_id": 1, "action": "rag_search", "query": query, "collection": "documents", "depends_on": []},
        {"step_id": 2, "action": "reasoning", "query": query, "depends_on": [1]},
    ]
    return json.dumps({"complexity": 0.9, "steps": steps}, ensure_ascii=False)


@pytest.mark.llm
@pytest.mark.live
def test_records_arrive_while_the_step_is_still_running(
    start_live_service: Callable[..., LiveService], llm_server: FakeLLMServer
) -> None:
    """The reasoning call blocks until the test has read the records before it: they were sent live."""
    release = threading.Event()
    answer = {"answer": "333メートル [S1]", "citations": ["S1"], "self_evaluation": {"accuracy": 0.9, "style": 0.9}}

    def responder(body: dict[str, Any]) -> Reply:
        if "You are the planner" in request_text(body):
            return Reply(content=_plan(TOWER_QUESTION))
        release.wait(timeout=10)
        return Reply(content=json.dumps(answer, ensure_ascii=False))

    llm_server.responder = responder
    env = {"LLM_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": llm_server.url, "LLM_MODEL": "fake"}
    service = start_live_service(env)
    with httpx.Client(base_url=service.base_url, timeout=20) as http:
        first = http.post(STEP, json={"request_id": "l-1", "query": TOWER_QUESTION}).json()
        assert first["action"] == "SEARCH", first
        body = {
            "request_id": "l-2",
            "state": first["state"],
            "tool_result": {"step_id": first["step_id"], "hits": STRONG_TOWER_HITS},
        }
        seen: list[str] = []
        with http.stream("POST", STREAM, json=body) as response:
            buffer = ""
            for chunk in response.iter_text():
                buffer += chunk
                seen = [e.get("event", "") for e in parse_sse(buffer)]
                started = [json.loads(e["data"]) for e in parse_sse(buffer) if e.get("event") == "progress"]
                if not release.is_set() and any(r["type"] == "step_started" and r["step_id"] == 2 for r in started):
                    assert "action" not in seen  # the answer is still being written
                    release.set()
            final = json.loads(parse_sse(buffer)[-1]["data"])
    assert release.is_set()
    assert final["action"] == "COMPLETE", final
    assert final["answer"] == "333メートル [S1]"


async def test_a_timeout_quotes_the_requests_budget_however_late_its_step_started() -> None:
    """A stream's step starts once its headers are sent: quoting what was left then read "999 ms" for 1000."""
    context = make_context().for_request(timeout_s=0.3)
    call = Call(spec=SPEC, data=None, prior=None, token=None, context=context, graph=None, budget_ms=300)
    await asyncio.sleep(0.1)  # the budget counts from the request's arrival, not from the step's start
    body = await guarded(call, asyncio.sleep(5))
    assert isinstance(body, ErrorResponse)
    assert (body.error_type, body.message) == (
        "TIMEOUT",
        "the step did not finish within its 300 ms budget; retry with the same state",
    )


def test_the_stream_and_the_plain_step_quote_the_same_timeout_budget(
    llm_client_for: Callable[..., TestClient[Litestar]], llm_server: FakeLLMServer
) -> None:
    llm_server.default_reply = Reply(content="{}", delay_s=5)
    client = llm_client_for()
    body = {"request_id": "t", "query": "東京タワーとスカイツリーの高さの違いは？", "constraints": {"timeout_ms": 300}}
    plain = client.post(STEP, json=body).json()
    _, streamed = stream(client, body)
    assert plain["error_type"] == streamed["error_type"] == "TIMEOUT"
    assert plain["message"] == streamed["message"]
    assert "within its 300 ms budget" in plain["message"]
