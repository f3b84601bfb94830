"""A hostile model behind every LLM-backed endpoint (issue 7 item 4).

The loopback fake answers with prose, fenced or truncated JSON, JSON of the wrong schema, ids that
are not in the input, empty replies, 429/500 bursts, persistent 500s and replies slower than the
deadline. Every endpoint must answer with a contract-valid body (a fallback, MODEL_FAILURE or
TIMEOUT within the deadline plus a small margin), never an invented id, never a 5xx.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import AceCurateResponse, AceGenerateResponse, AceReflectResponse
from contracts.common import ErrorResponse
from contracts.grace import GraceResponse
from contracts.librarian import LibrarianResponse
from contracts.proposal_quality import ProposalRunResponse
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.graphs.librarian.helpers import TOWER_HIT

pytestmark = pytest.mark.llm

REQUEST_TIMEOUT_MS = 1500
MARGIN_S = 0.6


@dataclass(frozen=True)
class Endpoint:
    """One LLM-backed endpoint: how to call it, what a reply with invented ids looks like, how to check ids."""

    name: str
    path: str
    body: dict[str, Any]
    response_type: Any
    invented_reply: str
    ids_in_response: Callable[[dict[str, Any]], set[str]]
    ids_in_input: set[str]
    failure_is_empty_result: bool = False
    """Seed 001: the reflector answers a model failure with an empty reflection, not an ERROR."""
    outage_action: str | None = None
    """The action a provider outage answers instead of an ERROR: GRACE's planner falls back to the template plan
    (seed 002 §4.1, `SEARCH`); ACE's curator keeps the counters and curates by its rules (`CURATED`)."""


DASHBOARD = {
    "trays": {
        "todo": [{"id": "n1", "title": "告知文の作成", "status": "todo"}],
        "doing": [{"id": "n2", "title": "会場の予約", "status": "doing"}],
    }
}


def _report_ids(body: dict[str, Any]) -> set[str]:
    text = json.dumps(body.get("report") or {}, ensure_ascii=False)
    return {token for token in ("n1", "n2", "ghost-1", "ghost-2") if f'"{token}"' in text}


ENDPOINTS: list[Endpoint] = [
    Endpoint(
        name="librarian",
        path="/agent/librarian/think",
        body={
            "request_id": "h",
            "user_query": "東京タワーの高さは何メートルですか",
            "subject_id": "s",
            "search_history": [{"queries_text": ["東京タワー"], "results": [TOWER_HIT]}],
        },
        response_type=LibrarianResponse,
        invented_reply=json.dumps({"sufficient": True, "selected": [{"id": "c99"}, {"id": "admin"}]}),
        ids_in_response=lambda b: {e["document_id"] for e in b.get("evidence", [])},
        ids_in_input={"tower"},
    ),
    *(
        Endpoint(
            name=kind,
            path=f"/api/{kind}/run",
            body={"request_id": "h", "dashboard": DASHBOARD, "focusNodeId": "n1"},
            response_type=ProposalRunResponse,
            invented_reply=json.dumps(
                {
                    "target_node_id": "ghost-1",
                    "target_title": "x",
                    "current_status": "todo",
                    "summary": "s",
                    "next_decision": "d",
                    "options": [],
                    "decomposition_proposals": [{"target_node_id": "ghost-2", "reason": "r"}],
                    "grouping_proposals": [],
                    "relation_proposals": [],
                },
                ensure_ascii=False,
            ),
            ids_in_response=_report_ids,
            ids_in_input={"n1", "n2"},
        )
        for kind in ("organizer", "advisor")
    ),
]


PLAYBOOK = {
    "bullets": [
        {"id": "gen-00001", "section": "general", "content": "東京タワーの高さは300メートルである。"},
        {"id": "gen-00002", "section": "general", "content": "Always paginate until an API returns an empty page."},
    ]
}
TRAJECTORY = {
    "query": "東京タワーの高さは？",
    "dataset": "default",
    "generated_answer": "300メートル",
    "reasoning_steps": ["gen-00001 says 300 m"],
    "used_bullet_ids": ["gen-00001"],
}
PLAYBOOK_IDS = {"gen-00001", "gen-00002"}


def _curated_ids(body: dict[str, Any]) -> set[str]:
    """Ids a curate response names for existing bullets (UPDATE/DELETE): must all be in the input playbook."""
    return {d["bullet_id"] for d in body.get("deltas", []) if d.get("type") in {"UPDATE", "DELETE"}}


ENDPOINTS += [
    Endpoint(
        name="ace-generate",
        path="/agent/ace/generate",
        body={"request_id": "h", "query": "東京タワーの高さは？", "playbook": PLAYBOOK},
        response_type=AceGenerateResponse,
        invented_reply=json.dumps({"answer": "333", "used_bullet_ids": ["ghost-1", "gen-00001"]}),
        ids_in_response=lambda b: set((b.get("trajectory") or {}).get("used_bullet_ids", [])),
        ids_in_input=PLAYBOOK_IDS,
    ),
    Endpoint(
        name="ace-reflect",
        path="/agent/ace/reflect",
        body={"request_id": "h", "trajectory": TRAJECTORY, "playbook": PLAYBOOK, "ground_truth": "333メートル"},
        response_type=AceReflectResponse,
        invented_reply=json.dumps(
            {"insights": [], "bullet_evaluations": [{"bullet_id": "ghost-1", "tag": "harmful", "reason": "r"}]}
        ),
        ids_in_response=lambda b: {e["bullet_id"] for e in (b.get("reflection") or {}).get("bullet_evaluations", [])},
        ids_in_input={"gen-00001"},  # only bullets the trajectory used may be evaluated
        failure_is_empty_result=True,
    ),
    Endpoint(
        name="ace-curate",
        path="/agent/ace/curate",
        body={
            "request_id": "h",
            "playbook": PLAYBOOK,
            "reflection": {
                "insights": [],
                "bullet_evaluations": [{"bullet_id": "gen-00001", "tag": "harmful", "reason": "wrong height"}],
                "trajectory_query": "東京タワーの高さは？",
                "trajectory_dataset": "default",
                "iteration_count": 1,
            },
        },
        response_type=AceCurateResponse,
        invented_reply=json.dumps({"deltas": [{"type": "DELETE", "bullet_id": "ghost-1", "reasoning": "r"}]}),
        ids_in_response=_curated_ids,
        ids_in_input=PLAYBOOK_IDS,
        outage_action="CURATED",
    ),
    Endpoint(
        name="grace-step",
        path="/agent/grace/step",
        body={"request_id": "h", "query": "東京タワーとスカイツリーの高さの違いを比較して理由も説明して"},
        response_type=GraceResponse,
        invented_reply=json.dumps(
            {
                "complexity": 0.9,
                "steps": [
                    {
                        "step_id": 1,
                        "action": "rag_search",
                        "query": "q",
                        "collection": "ghost-collection",
                        "depends_on": [7],
                    },
                    {"step_id": 2, "action": "launch_missiles", "depends_on": [1]},
                ],
            }
        ),
        ids_in_response=lambda b: {b["collection"]} if b.get("action") == "SEARCH" else set(),
        ids_in_input={"documents"},  # the configured default collection is the only one the caller offered
        outage_action="SEARCH",
    ),
]


def _burst(status: int, failures: int, then: str) -> Callable[[dict[str, Any]], Reply]:
    calls = {"n": 0}

    def respond(_: dict[str, Any]) -> Reply:
        calls["n"] += 1
        return Reply(status=status, content="busy") if calls["n"] <= failures else Reply(content=then)

    return respond


MODES: dict[str, Callable[[Endpoint], Reply | Callable[[dict[str, Any]], Reply]]] = {
    "prose": lambda e: Reply(content="I am sorry, I cannot answer in JSON today."),
    "fenced-invented": lambda e: Reply(content=f"```json\n{e.invented_reply}\n```"),
    "truncated": lambda e: Reply(content=e.invented_reply[: len(e.invented_reply) // 2]),
    "wrong-schema": lambda e: Reply(content='{"answer": 42, "items": "none"}'),
    "invented-ids": lambda e: Reply(content=e.invented_reply),
    "empty": lambda e: Reply(content=""),
    "429-burst": lambda e: _burst(429, 2, e.invented_reply),
    "500-burst": lambda e: _burst(500, 2, e.invented_reply),
    "500-persistent": lambda e: Reply(status=500, content="down"),
    "slower-than-deadline": lambda e: Reply(content=e.invented_reply, delay_s=5),
}


@pytest.fixture(name="hostile_client", scope="module")
def fixture_hostile_client(fake_llm: FakeLLMServer) -> Iterator[TestClient[Litestar]]:
    from librarian_svc.app import create_app
    from librarian_svc.settings import load_settings

    env = {
        "LLM_PROVIDER": "openai-compatible",
        "OPENAI_BASE_URL": fake_llm.url,
        "LLM_MODEL": "hostile",
        "LLM_MAX_RETRIES": "2",
        "LLM_TIMEOUT_MS": "1000",
        "REQUEST_TIMEOUT_MS": str(REQUEST_TIMEOUT_MS),
    }
    with TestClient(app=create_app(load_settings(env)), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_hostile_model(
    hostile_client: TestClient[Litestar], fake_llm: FakeLLMServer, endpoint: Endpoint, mode: str
) -> None:
    fake_llm.reset()
    behaviour = MODES[mode](endpoint)
    if isinstance(behaviour, Reply):
        fake_llm.default_reply = behaviour
    else:
        fake_llm.responder = behaviour
    started = time.monotonic()
    response = hostile_client.post(endpoint.path, json=endpoint.body)
    elapsed = time.monotonic() - started
    fake_llm.reset()

    assert response.status_code == 200, response.text[:500]
    body = response.json()
    # Contract-valid, whatever the model did: the endpoint's own response, or the shared ERROR body.
    msgspec.convert(body, ErrorResponse if body.get("action") == "ERROR" else endpoint.response_type)
    assert endpoint.ids_in_response(body) <= endpoint.ids_in_input, body
    assert elapsed <= REQUEST_TIMEOUT_MS / 1000 + MARGIN_S, elapsed
    expected = {"slower-than-deadline": "TIMEOUT", "500-persistent": "MODEL_FAILURE"}.get(mode)
    if expected:  # every failed call is still counted, whatever the body
        assert body["usage"]["llm_calls"] >= 1, body
    if expected and endpoint.failure_is_empty_result:
        assert body["model_problem"]["error_type"] == expected
        assert body["reflection"]["bullet_evaluations"] == []
    elif expected == "MODEL_FAILURE" and endpoint.outage_action is not None:
        assert body["action"] == endpoint.outage_action, body
        assert (body["usage"]["engine"], body["usage"]["fallback"]) == ("heuristic", True)
    elif expected:
        assert body.get("action") == "ERROR"
        assert body["error_type"] == expected
