"""Whole sessions of the other agents, driven the way a caller would: GRACE's step loop and ACE's learning loop.

Used by the scale-out test and the soak benchmark. Each returns every response body in order, so
callers can compare the outcome of a run on one instance with a run spread over several.
"""

from __future__ import annotations

from typing import Any

import httpx

from reference_orchestrator.corpus import Corpus

GRACE_STEP = "/agent/grace/step"


def grace_hits(corpus: Corpus, query: str, k: int) -> list[dict[str, Any]]:
    """A SEARCH answered from the corpus, scores scaled into [0, 1] as GRACE's contract wants."""
    ranked = corpus.text_search(query, k)
    top = ranked[0][1] if ranked else 1.0
    return [
        {
            "document_id": c.document_id,
            "page": c.page,
            "chunk_id": c.chunk_id,
            "snippet": c.text,
            "score": round(score / top, 6),
        }
        for c, score in ranked
    ]


async def run_grace(
    client: httpx.AsyncClient, corpus: Corpus, question: str, *, request_id: str, max_calls: int = 30
) -> list[dict[str, Any]]:
    """Step until COMPLETE or ERROR: searches from the corpus, every question answered with PROCEED."""
    headers = {"X-Session-Id": request_id}
    body: dict[str, Any] = {"request_id": f"{request_id}-1", "query": question, "state": None}
    steps = []
    for call in range(1, max_calls + 1):
        answer = (await client.post(GRACE_STEP, json=body, headers=headers)).json()
        steps.append(answer)
        action = answer.get("action")
        if action not in {"SEARCH", "ASK_USER"}:
            return steps
        body = {"request_id": f"{request_id}-{call + 1}", "state": answer["state"]}
        if action == "SEARCH":
            hits = grace_hits(corpus, answer["query"], min(5, answer.get("top_k") or 5))
            body["tool_result"] = {"step_id": answer["step_id"], "hits": hits, "turn": answer["turn"]}
        else:
            step = answer.get("step") or {}
            body["user_response"] = {
                "decision": "PROCEED",
                # A PLAN ask is approved as it is and reads no input (400 if given); a question reads it.
                **({} if answer.get("kind") == "PLAN" else {"input": "この情報で続けてください"}),
                "turn": answer["turn"],
                **({"step_id": step["step_id"]} if step.get("step_id") else {}),
            }
    raise RuntimeError(f"GRACE asked for more than {max_calls} steps")


async def run_ace(
    client: httpx.AsyncClient, playbook: dict[str, Any], query: str, ground_truth: str, *, request_id: str
) -> list[dict[str, Any]]:
    """One turn of the learning loop: search → generate → reflect → curate; returns the four bodies."""
    headers = {"X-Session-Id": request_id}

    async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post(path, json={"request_id": request_id, **body}, headers=headers)
        payload: dict[str, Any] = response.json()
        if response.status_code != 200 or payload.get("action") == "ERROR":
            raise RuntimeError(f"{path}: {response.status_code} {payload}")
        return payload

    searched = await post("/agent/ace/search", {"query": {"query_text": query, "top_k": 3}, "playbook": playbook})
    generated = await post("/agent/ace/generate", {"query": query, "playbook": playbook})
    reflected = await post(
        "/agent/ace/reflect",
        {"trajectory": generated["trajectory"], "playbook": playbook, "ground_truth": ground_truth},
    )
    curated = await post(
        "/agent/ace/curate",
        {"reflection": reflected["reflection"], "playbook": playbook, "trajectory": generated["trajectory"]},
    )
    return [searched, generated, reflected, curated]
