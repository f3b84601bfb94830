"""The real process: JSON log lines for Cloud Logging, request_id and trace bound, secrets never logged."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.live_service import LiveService

pytestmark = pytest.mark.live

SECRET = "sk-test-this-must-never-appear"
SIGNING = "signing-key-that-must-not-leak-0123"


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_json_logs_carry_severity_request_id_and_trace(start_live_service: Callable[..., LiveService]) -> None:
    service = start_live_service(
        {
            "OPENAI_API_KEY": SECRET,
            "LLM_PROVIDER": "heuristic",
            "STATE_SIGNING_KEYS": SIGNING,
            "GOOGLE_CLOUD_PROJECT": "p1",
        }
    )
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    body = {"request_id": "req-log-1", "user_query": "富士山の高さは", "subject_id": "s"}
    response = httpx.post(
        f"{service.base_url}/agent/librarian/think",
        json=body,
        headers={"traceparent": f"00-{trace}-00f067aa0ba902b7-01"},
        timeout=10,
    )
    assert response.status_code == 200
    signature = response.json()["state"].split(".")[2]
    httpx.get(f"{service.base_url}/health", headers={"X-Cloud-Trace-Context": "abc123/1;o=1"}, timeout=5)
    service.stop()
    text = service.logs()
    lines = _json_lines(text)
    assert lines, text
    for line in lines:
        assert {"severity", "message", "timestamp"} <= line.keys(), line
    access = [line for line in lines if line["message"] == "request" and line.get("path") == "/agent/librarian/think"]
    assert access
    assert access[0]["request_id"] == "req-log-1"
    assert access[0]["status"] == 200
    assert access[0]["logging.googleapis.com/trace"] == f"projects/p1/traces/{trace}"
    assert "latency_ms" in access[0]
    health = [line for line in lines if line.get("path") == "/health"]
    assert health[0]["logging.googleapis.com/trace"] == "projects/p1/traces/abc123"
    assert any(line["severity"] == "WARNING" and "heuristic" in line["message"] for line in lines)
    assert SECRET not in text
    assert SIGNING not in text
    assert signature not in text


def test_openapi_lists_every_endpoint_with_its_types(live_service: LiveService) -> None:
    spec = httpx.get(f"{live_service.base_url}/schema/openapi.json", timeout=10).json()
    assert {"/health", "/ready", "/agent/librarian/think"} <= set(spec["paths"])
    think = spec["paths"]["/agent/librarian/think"]["post"]
    assert think["operationId"] == "librarianThink"
    schemas = spec["components"]["schemas"]
    assert any("LibrarianRequest" in name for name in schemas)
    assert any("SearchAction" in name for name in schemas)
    assert any("CompleteAction" in name for name in schemas)
    assert httpx.get(f"{live_service.base_url}/schema", timeout=10).status_code == 200


def test_ready_reports_engine_and_graphs(live_service: LiveService) -> None:
    ready = httpx.get(f"{live_service.base_url}/ready", timeout=5).json()
    assert ready["status"] == "ready"
    assert ready["engine"] == "heuristic"
    assert "librarian" in ready["graphs"]
