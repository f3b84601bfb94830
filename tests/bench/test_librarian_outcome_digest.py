"""The outcome digest sees what the Librarian decided and nothing else (not the token bytes, the time or the usage)."""

from __future__ import annotations

from typing import Any

from bench.librarian_outcome_digest import question_digest
from contracts.librarian import LibrarianState
from librarian_svc.state.token import StateCodec


def codec(key: bytes) -> StateCodec:
    return StateCodec(keys=[key], max_state_bytes=1 << 20)


def step(sealer: StateCodec, *, notes: str = "Covered: 東京タワー.", issued_at: float = 1_000.0) -> dict[str, Any]:
    state = LibrarianState(rounds_seen=1, max_loops=3, history_digest="a" * 64, query_digest="b" * 64, subject_id="s")
    return {
        "action": "COMPLETE",
        "request_id": "q1-2",
        "evidence": [{"document_id": "d", "pages": [1], "snippets": ["333 m"], "score": 0.9, "why_relevant": "x"}],
        "coverage_notes": notes,
        "state": sealer.seal(state, agent="librarian", schema_version=1, now=issued_at),
        "usage": {"engine": "heuristic", "llm_calls": 0},
    }


def test_the_digest_ignores_the_token_bytes_the_issue_time_and_usage() -> None:
    first = step(codec(b"k" * 32))
    second = step(codec(b"k" * 32), issued_at=2_000.0) | {"usage": {"engine": "heuristic", "llm_calls": 3}}
    assert question_digest([first], codec(b"k" * 32)) == question_digest([second], codec(b"k" * 32))


def test_the_digest_changes_with_what_was_decided() -> None:
    sealer = codec(b"k" * 32)
    assert question_digest([step(sealer)], sealer) != question_digest([step(sealer, notes="Covered: none.")], sealer)
    state = LibrarianState(rounds_seen=2, max_loops=3, history_digest="a" * 64, query_digest="b" * 64, subject_id="s")
    moved = step(sealer) | {"state": sealer.seal(state, agent="librarian", schema_version=1, now=1_000.0)}
    assert question_digest([step(sealer)], sealer) != question_digest([moved], sealer)
