"""The request cost model (`contracts/limits.py`): just over each limit is refused before any work, naming it.

Per-field limits are in the wire types (422 with the field's path); totals across fields are the
operations' checks (413 with the collection's path and the limit's name). Sizes are the smallest
that cross each limit, so the suite stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.limits import ACE, GRACE, LIBRARIAN, README_BEGIN, README_END, readme_table

THINK = "/agent/librarian/think"
QUESTION = {"request_id": "r", "user_query": "東京タワーの高さ", "subject_id": "s"}
REFLECTION = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "default"}
INSIGHT = dict.fromkeys(
    ("reasoning", "error_identification", "root_cause_analysis", "correct_approach", "key_insight"), "x"
)


def _hit(i: int, chars: int = 1) -> dict[str, Any]:
    return {"document_id": f"d{i}", "page": i, "snippet": "あ" * chars, "score": 1.0}


def _history(hits: list[dict[str, Any]], rounds: int = 0, queries: list[str] | None = None) -> list[dict[str, Any]]:
    """The hits in `rounds` rounds (0: as few as the per-round limit allows)."""
    rounds = rounds or -(-len(hits) // LIBRARIAN.hits_per_round)
    per = -(-len(hits) // rounds)
    return [
        {"queries_text": queries or ["q"], "queries_vector": [], "results": hits[r * per : (r + 1) * per]}
        for r in range(rounds)
    ]


def _bullets(count: int, chars: int) -> dict[str, Any]:
    return {"bullets": [{"id": f"b-{i}", "section": "general", "content": "x" * chars} for i in range(count)]}


def _refused(response: Any, status: int, path: str, name: str | None = None) -> None:
    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["error_type"] == "INVALID_INPUT"
    assert path in [d["path"] for d in answer["details"]], answer["details"]
    if name is not None:
        assert name in answer["message"]


LIBRARIAN_TOTALS = [
    pytest.param(
        {"search_history": _history([_hit(i) for i in range(LIBRARIAN.hits_total + 1)])},
        "librarian hits_total",
        id="hits",
    ),
    pytest.param(
        {
            "search_history": _history(
                [
                    _hit(i, LIBRARIAN.snippet_chars)
                    for i in range(LIBRARIAN.snippet_chars_total // LIBRARIAN.snippet_chars + 1)
                ]
            )
        },
        "librarian snippet_chars_total",
        id="snippet-characters",
    ),
    pytest.param(
        {
            "search_history": _history(
                [_hit(0)],
                rounds=1,
                queries=["q" * LIBRARIAN.query_chars] * LIBRARIAN.queries_per_round,
            )
            * (LIBRARIAN.query_chars_total // (LIBRARIAN.query_chars * LIBRARIAN.queries_per_round) + 1),
            "constraints": {"max_loops": LIBRARIAN.rounds},
        },
        "librarian query_chars_total",
        id="query-characters",
    ),
    pytest.param(
        {
            "conversation": [{"role": "user", "content": "あ" * LIBRARIAN.turn_chars}]
            * (LIBRARIAN.conversation_chars_total // LIBRARIAN.turn_chars + 1)
        },
        "librarian conversation_chars_total",
        id="conversation",
    ),
]


@pytest.mark.parametrize(("extra", "name"), LIBRARIAN_TOTALS)
def test_librarian_totals_are_413_naming_the_limit(
    client: TestClient[Litestar], extra: dict[str, Any], name: str
) -> None:
    where = "$.conversation" if "conversation" in extra else "$.search_history"
    _refused(client.post(THINK, json={**QUESTION, **extra}), 413, where, name)


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        pytest.param(
            {"search_history": _history([_hit(0, LIBRARIAN.snippet_chars + 1)])},
            "$.search_history[0].results[0].snippet",
            id="snippet",
        ),
        pytest.param(
            {"search_history": _history([_hit(i) for i in range(LIBRARIAN.hits_per_round + 1)], rounds=1)},
            "$.search_history[0].results",
            id="hits-per-round",
        ),
        pytest.param({"user_query": "あ" * (LIBRARIAN.user_query_chars + 1)}, "$.user_query", id="user-query"),
        pytest.param(
            {"search_history": [{"results": [{**_hit(0), "metadata": {f"k{i}": i for i in range(33)}}]}]},
            "$.search_history[0].results[0].metadata",
            id="metadata-keys",
        ),
    ],
)
def test_librarian_fields_are_422_with_the_path(client: TestClient[Litestar], extra: dict[str, Any], path: str) -> None:
    _refused(client.post(THINK, json={**QUESTION, **extra}), 422, path)


def test_the_worst_accepted_librarian_totals_are_accepted(client: TestClient[Litestar]) -> None:
    """Exactly at every total: not refused (the limits are inclusive)."""
    hits = [_hit(i, LIBRARIAN.snippet_chars_total // LIBRARIAN.hits_total) for i in range(LIBRARIAN.hits_total)]
    body = {**QUESTION, "search_history": _history(hits), "constraints": {"max_loops": 1}}
    assert client.post(THINK, json=body).status_code == 200


def test_an_ace_playbook_over_its_character_total_is_413(client: TestClient[Litestar]) -> None:
    count = ACE.playbook_chars_total // ACE.bullet_chars + 1
    body = {"query": {"query_text": "x"}, "playbook": _bullets(count, ACE.bullet_chars)}
    _refused(client.post("/agent/ace/search", json=body), 413, "$.playbook.bullets", "ace playbook_chars_total")


def test_a_curate_over_its_changes_total_is_413(client: TestClient[Litestar]) -> None:
    body = {
        "reflection": {**REFLECTION, "insights": [INSIGHT]},
        "playbook": _bullets(1, 10),
        "deltas": [{"type": "ADD", "section": "general", "content": f"lesson {i}"} for i in range(ACE.deltas)],
    }
    _refused(client.post("/agent/ace/curate", json=body), 413, "$.deltas", "ace changes_total")


def test_a_trajectory_over_its_character_total_is_413(client: TestClient[Litestar]) -> None:
    steps = ACE.trajectory_chars_total // 20_000 + 1
    trajectory = {"query": "q", "reasoning_steps": ["x" * 20_000] * steps}
    body = {"trajectory": trajectory, "playbook": _bullets(1, 10)}
    _refused(client.post("/agent/ace/reflect", json=body), 413, "$.trajectory", "ace trajectory_chars_total")


def test_an_imported_playbook_is_held_to_the_same_limits(client: TestClient[Litestar], tmp_path: Path) -> None:
    lines = ["## GENERAL"] + [f"[gen-{i:05d}] helpful=0 harmful=0 :: lesson {i}" for i in range(ACE.bullets + 1)]
    response = client.put(
        "/playbooks/hostile-import", content="\n".join(lines).encode(), headers={"content-type": "text/plain"}
    )
    _refused(response, 413, "$.bullets", "ace bullets")


def test_a_grace_tool_result_over_its_character_total_is_413(client: TestClient[Litestar]) -> None:
    first = client.post("/agent/grace/step", json={"query": "東京タワーの高さは"}).json()
    assert first["action"] == "SEARCH", first
    chars = GRACE.hit_chars_total // GRACE.hits + 1
    hits = [{"document_id": f"d{i}", "snippet": "あ" * chars} for i in range(GRACE.hits)]
    body = {"state": first["state"], "tool_result": {"step_id": first["step_id"], "hits": hits}}
    _refused(client.post("/agent/grace/step", json=body), 413, "$.tool_result.hits", "grace hit_chars_total")


def test_the_readme_table_is_the_limits_module() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    _, _, rest = readme.partition(README_BEGIN)
    table, _, _ = rest.partition(README_END)
    assert table.strip() == readme_table(), "run `python -m contracts.limits --readme` after changing a limit"
