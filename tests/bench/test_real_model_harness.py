"""`make real-model`'s harness, against the scripted fake provider instead of the real model (fast, in `make test`).

The same code paths as the real run — the recording proxies, every agent's session over HTTP, the log and
usage bookkeeping, the contract checks and the printed report — so the harness cannot rot between real runs.
The fake answers each agent's prompt with a usable reply, except where a re-ask or a fallback is wanted.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.real_model.harness import HarnessConfig, contract_holds, render_report, run_all
from bench.real_model.proxy import RecordingProxy
from bench.tools import JSQUAD
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.support.live_service import LiveService

pytestmark = [pytest.mark.live, pytest.mark.llm]

ORGANIZER = {
    "decomposition_proposals": [
        {
            "target_node_id": "n1",
            "target_title": "リリース準備",
            "reason": "作業が二つに分かれているため",
            "suggested_children": [
                {"title": "告知文の作成", "context": "文面を書く"},
                {"title": "当日の連絡体制", "context": "連絡係を決める"},
            ],
        }
    ],
    "grouping_proposals": [],
    "relation_proposals": [],
    "summary": "まず告知文の作成から分けて考える案です。",
}
ADVISOR = {
    "target_node_id": "n3",
    "target_title": "会場の予約",
    "current_status": "doing",
    "options": [
        {
            "label": f"案{name}",
            "next_action": "候補を調べる",
            "necessary_info": "人数",
            "criteria_note": "費用",
            "risks": ["満席"],
        }
        for name in "AB"
    ],
    "criteria": [{"name": "費用", "description": "予算内か"}, {"name": "距離", "description": "駅から近いか"}],
    "next_decision": "どちらの案で進めるか",
    "summary": "二つの案があります。",
}


def respond(body: dict[str, Any]) -> Reply:
    """A model that answers each agent's prompt (its first message) the way the harness wants to see it."""
    prompt = str(body["messages"][0]["content"])
    reask = len(body["messages"]) > 1
    if "requires_confirmation" in prompt:  # GRACE's planner: never usable → re-ask → the template plan
        return Reply(content='{"complexity": 0.2}', usage=(200, 10))
    if "self_evaluation" in prompt:
        answer = {
            "answer": "アムステルダムです [S1]",
            "citations": ["S1"],
            "self_evaluation": {"accuracy": 0.9, "style": 0.8},
        }
        return Reply(content=json.dumps(answer, ensure_ascii=False), usage=(300, 40))
    if "queries_text" in prompt:  # the Librarian: pick the first candidate once there is one
        ids = re.findall(r"^\[(c\d+)\]", prompt, flags=re.M)
        decision: dict[str, Any] = {"sufficient": bool(ids), "rationale": "r", "coverage_notes": "covers the period"}
        if ids:
            decision["selected"] = [{"id": ids[0], "why_relevant": "states when the rainy season is"}]
        else:
            decision |= {"queries_text": ["梅雨 時期"], "queries_vector": ["梅雨はいつ頃見られますか"]}
        return Reply(content=json.dumps(decision, ensure_ascii=False), usage=(400, 60))
    if "bullet_evaluations" in prompt:
        reflection = {
            "insights": [
                {
                    "reasoning": "r",
                    "error_identification": "300 was wrong",
                    "root_cause_analysis": "an outdated bullet",
                    "correct_approach": "use 333",
                    "key_insight": "東京タワーの高さは333メートル",
                }
            ],
            "bullet_evaluations": [{"bullet_id": "gen-00001", "tag": "harmful", "reason": "wrong figure"}],
        }
        return Reply(content=json.dumps(reflection, ensure_ascii=False), usage=(350, 80))
    if "deltas" in prompt:
        return Reply(content='{"deltas": []}', usage=(250, 5))
    if "used_bullet_ids" in prompt:
        reply = {"answer": "300メートル", "reasoning_steps": ["bullet"], "used_bullet_ids": ["gen-00001"]}
        return Reply(content=json.dumps(reply, ensure_ascii=False), usage=(220, 30))
    if "decomposition_proposals" in prompt:  # the Organizer: prose first, then the report on the re-ask
        return Reply(content=json.dumps(ORGANIZER, ensure_ascii=False) if reask else "I think...", usage=(500, 90))
    if "next_decision" in prompt:
        return Reply(content=json.dumps(ADVISOR, ensure_ascii=False), usage=(480, 120))
    return Reply(content="{}")


def test_the_harness_reports_every_agent_against_the_fake(
    llm_server: FakeLLMServer, start_live_service: Callable[..., LiveService]
) -> None:
    llm_server.responder = respond
    with RecordingProxy(llm_server.root_url) as chat, RecordingProxy(llm_server.root_url) as embeddings:
        service = start_live_service(
            {
                "LLM_PROVIDER": "openai-compatible",
                "OPENAI_BASE_URL": f"{chat.root_url}/v1",
                "LLM_MODEL": "fake",
                "EMBEDDING_BASE_URL": f"{embeddings.root_url}/v1",
                "EMBEDDING_MODEL": "e5",
                "LLM_MAX_RETRIES": "0",
                "LLM_TIMEOUT_MS": "5000",
            }
        )
        cfg = HarnessConfig(
            base_url=service.base_url,
            chat=chat,
            embeddings=embeddings,
            jsquad=JSQUAD,
            orchestrator_embeddings_url=llm_server.url,
            timeout_ms=20_000,
        )
        runs = asyncio.run(
            run_all(cfg, lambda: [json.loads(x) for x in service.logs().splitlines() if x.startswith("{")])
        )
        report = render_report(runs, title="smoke", settings={"LLM_MODEL": "fake"}, extra=embeddings.exchanges)

    by_name = {run.name: run for run in runs}
    assert list(by_name) == ["librarian", "grace", "ace", "organizer", "advisor"]
    assert all(run.failure is None for run in runs), report
    assert all(run.completed for run in runs), report
    assert contract_holds(runs), report
    # The wire and the report agree: every chat request the fake answered belongs to exactly one agent step.
    assert sum(len(run.calls) for run in runs) == len(llm_server.chat_requests)
    assert [len(run.calls) for run in runs] == [2, 3, 3, 2, 1], report
    # GRACE's planner was re-asked, then the template plan took over: a fallback with its reason, from the log.
    grace = by_name["grace"]
    assert sum(call.is_reask for call in grace.calls) == 1
    assert any("template" in text and "steps" in text for text in grace.fallbacks), grace.fallbacks
    assert sum(call.is_reask for call in by_name["organizer"].calls) == 1
    assert not by_name["advisor"].fallbacks
    # The embedder got each text's role: playbook bullets as passages, the query as a query.
    roles = {e.request.get("input_type") for e in embeddings.exchanges}
    assert roles == {"passage", "query"}
    for name in by_name:
        assert re.search(rf"^{name}\s+yes\s", report, flags=re.M), report
    assert "embeddings (service → server)" in report


def test_a_session_that_breaks_is_reported_not_raised(
    llm_server: FakeLLMServer, start_live_service: Callable[..., LiveService], tmp_path: Path
) -> None:
    with RecordingProxy(llm_server.root_url) as chat:
        service = start_live_service({"LLM_PROVIDER": "heuristic"})
        missing = tmp_path / "no-such-jsquad.json"
        cfg = HarnessConfig(
            base_url=service.base_url,
            chat=chat,
            embeddings=None,
            jsquad=missing,
            orchestrator_embeddings_url=None,
            timeout_ms=10_000,
        )
        with pytest.raises(FileNotFoundError):
            asyncio.run(run_all(cfg, list))


def test_the_proxy_drops_a_request_its_client_gave_up_on(llm_server: FakeLLMServer) -> None:
    # The service's timeout must free the model server too, or a CPU model keeps generating for nobody.
    llm_server.script(Reply(content="late", delay_s=5.0))
    with RecordingProxy(llm_server.root_url) as chat:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{chat.root_url}/v1/chat/completions", json={"model": "m", "messages": []}, timeout=0.5)
        deadline = time.monotonic() + 5
        while not chat.exchanges and time.monotonic() < deadline:
            time.sleep(0.05)
        (exchange,) = chat.exchanges
    assert (exchange.status, exchange.finish_reason) == (499, "abandoned")
    assert exchange.seconds < 2.0, "the proxy stopped waiting when its client hung up"
