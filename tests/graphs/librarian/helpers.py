"""Builders for Librarian requests and histories used across the Librarian tests."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.librarian import LibrarianRequest, SearchHit, SearchRound


def hit(
    document_id: str, snippet: str, *, page: int | None = None, score: float = 1.0, query: str | None = None
) -> SearchHit:
    return SearchHit(
        document_id=document_id,
        page=page,
        chunk_id=None if page is None else f"{document_id}#{page}",
        snippet=snippet,
        score=score,
        metadata={"query": query} if query else {},
    )


def round_of(*hits: SearchHit, queries: list[str] | None = None) -> SearchRound:
    return SearchRound(queries_text=queries or ["q"], queries_vector=[], results=list(hits))


def request(user_query: str = "東京タワーの高さは何メートルですか", **fields: Any) -> LibrarianRequest:
    return msgspec.convert(
        {"request_id": "r-1", "user_query": user_query, "subject_id": "subj", **fields}, LibrarianRequest
    )


TOWER_HIT: dict[str, Any] = {
    "document_id": "tower",
    "page": 3,
    "chunk_id": "tower#3",
    "snippet": "東京タワーの高さは333メートルである。東京タワーは東京都港区にある電波塔。",
    "score": 9.5,
}
"""A hit that answers 「東京タワーの高さは何メートルですか」, as JSON the caller would send."""
