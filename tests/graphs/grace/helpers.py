"""Builders, an HTTP session walker and an SSE parser shared by the GRACE tests.

GRACE is served by the shared app: use the `client` / `make_app` / `start_live_service` fixtures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from litestar import Litestar
from litestar.testing import TestClient

STEP = "/agent/grace/step"
STREAM = "/agent/grace/step/stream"
TOWER_QUESTION = "東京タワーの高さは何メートルですか"


def hit(document_id: str, snippet: str, score: float | None, **extra: Any) -> dict[str, Any]:
    """A search hit as the caller sends it (the Librarian's SearchHit shape)."""
    return {"document_id": document_id, "snippet": snippet, "score": score, **extra}


STRONG_TOWER_HITS = [
    hit(
        "tower",
        "東京タワーの高さは333メートルである。東京タワーは東京都港区にある電波塔。",
        0.95,
        page=3,
        chunk_id="t#3",
    ),
    hit("encyclopedia", "東京タワーは高さ333メートルの電波塔で、1958年に完成した。", 0.93),
    hit("guidebook", "東京タワー（高さ333メートル）は港区芝公園にあるタワーである。", 0.92),
]
"""Three agreeing, high-scoring sources: the high-confidence path."""

MIDDLING_TOWER_HITS = [
    hit("blog", "東京タワーの高さは333メートルだと言われている。", 0.6),
    hit("forum", "東京タワーは高さが333メートルあるらしい。", 0.55),
]
"""Relevant but weakly scored sources: a search result at CONFIRM."""

WEAK_HITS = [
    hit("noise-1", "富士山の標高は3776メートルである。", 0.15),
    hit("noise-2", "大阪城は大阪市中央区にある城である。", 0.1),
]
"""Poor matches: a search result at ESCALATE (not empty, so no automatic replan)."""


@dataclass
class Walker:
    """Walks one GRACE session over HTTP, sending back the state and what each action asked for."""

    client: TestClient[Litestar]
    path: str = STEP
    last: dict[str, Any] = field(default_factory=dict)
    calls: int = 0

    def post(self, body: dict[str, Any], expect: int = 200) -> dict[str, Any]:
        self.calls += 1
        response = self.client.post(self.path, json={"request_id": f"req-{self.calls}", **body})
        assert response.status_code == expect, response.text
        answer: dict[str, Any] = response.json()
        if expect == 200:
            self.last = answer
        return answer

    def start(self, query: str = TOWER_QUESTION, **extra: Any) -> dict[str, Any]:
        return self.post({"query": query, "state": None, **extra})

    def search(
        self,
        hits: list[dict[str, Any]] | None = None,
        *,
        error: str | None = None,
        expect: int = 200,
        **extra: Any,
    ) -> dict[str, Any]:
        assert self.last["action"] == "SEARCH", self.last
        result: dict[str, Any] = {"step_id": self.last["step_id"], "hits": hits or [], "turn": self.last["turn"]}
        if error is not None:
            result["error"] = error
        return self.post({"state": self.last["state"], "tool_result": result, **extra}, expect=expect)

    def answer(
        self, decision: str, text: str | None = None, feedback: str | None = None, *, expect: int = 200
    ) -> dict[str, Any]:
        assert self.last["action"] == "ASK_USER", self.last
        response: dict[str, Any] = {"decision": decision, "turn": self.last["turn"]}
        if text is not None:
            response["input"] = text
        if feedback is not None:
            response["feedback"] = feedback
        return self.post({"state": self.last["state"], "user_response": response}, expect=expect)


def event_types(answer: dict[str, Any]) -> list[str]:
    """The `type` of every event in a response, in order."""
    return [e["type"] for e in answer["events"]]


def parse_sse(text: str) -> list[dict[str, str]]:
    """Server-Sent Events as dicts of their fields (`event`, `id`, `data`), in order."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if ": " in line and not line.startswith(":"):
                name, value = line.split(": ", 1)
                fields[name] = fields[name] + "\n" + value if name in fields else value
        if fields:
            events.append(fields)
    return events
