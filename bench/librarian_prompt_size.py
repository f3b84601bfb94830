"""Prompt size the Librarian sends to a model as the history grows (issue 3: bounded at 1, 3 and 10 rounds).

The service runs in-process with its provider pointed at the loopback fake OpenAI-compatible
server; each history round holds a tenth of the request limits' hits (`contracts/limits.py`: 30 hits of
~200 characters), so 10 rounds are the most history a request may carry. The figure is the prompt the
model actually received (characters), against the size of the history it summarises.

    python -m bench.librarian_prompt_size
"""

from __future__ import annotations

import json
import platform
import sys

import msgspec
from litestar.testing import TestClient

from bench.tools import emit
from contracts.limits import LIBRARIAN
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.settings import load_settings
from tests.fakes.llm_server import FakeLLMServer, Reply, request_text

HITS_PER_ROUND = LIBRARIAN.hits_total // 10
SNIPPET_CHARS = LIBRARIAN.snippet_chars_total // LIBRARIAN.hits_total

DECISION = json.dumps(
    {"sufficient": True, "missing": [], "selected": [], "queries_text": [], "queries_vector": [], "rationale": ""}
)


def history(rounds: int) -> list[dict[str, object]]:
    return [
        {
            "queries_text": [f"東京タワー 高さ {r}"],
            "results": [
                {
                    "document_id": f"doc-{r}-{i}",
                    "page": i,
                    "snippet": (f"東京タワー {r}-{i}。" + "電波塔の資料本文が続く。" * 50)[:SNIPPET_CHARS],
                    "score": 10.0 - i / 10,
                }
                for i in range(HITS_PER_ROUND)
            ],
        }
        for r in range(rounds)
    ]


def main() -> None:
    configure_logging("console", "warning", stream=sys.stderr)
    rows = []
    with FakeLLMServer(default_reply=Reply(content=DECISION)) as server:
        settings = load_settings(
            {"LLM_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": server.url, "LLM_MODEL": "fake"}
        )
        with TestClient(app=create_app(settings)) as client:
            for rounds in (1, 3, 10):
                server.reset()
                server.default_reply = Reply(content=DECISION)
                body = {
                    "request_id": f"size-{rounds}",
                    "user_query": "東京タワーの高さは何メートルですか",
                    "subject_id": "s",
                    "search_history": history(rounds),
                    "constraints": {"max_loops": 10},
                }
                response = client.post("/agent/librarian/think", json=body)
                assert response.status_code == 200, response.text
                prompt = request_text(server.chat_requests[-1])
                rows.append(
                    {
                        "rounds": rounds,
                        "history_bytes": len(msgspec.json.encode(body["search_history"])),
                        "prompt_chars": len(prompt),
                    }
                )
    report = {
        "benchmark": "librarian_prompt_size",
        "command": "python -m bench.librarian_prompt_size",
        "rows": rows,
        "prompt_growth_1_to_10_rounds": round(rows[-1]["prompt_chars"] / rows[0]["prompt_chars"], 3),
        "history_growth_1_to_10_rounds": round(rows[-1]["history_bytes"] / rows[0]["history_bytes"], 3),
        "python": platform.python_version(),
    }
    emit(report, None)


if __name__ == "__main__":
    main()
