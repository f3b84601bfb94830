"""Librarian wire contract (DESIGN.md §5, seed 003 §4): one thinking step of an evidence search.

Protocol: call with `state: null` → run the SEARCH it returns → call again with the returned
`state` and the results appended to `search_history` → … until COMPLETE or ERROR.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from contracts.base import RequestId, WireStruct
from contracts.common import ErrorResponse, Usage
from contracts.limits import LIBRARIAN
from contracts.state import StateToken

LIBRARIAN_STATE_VERSION = 1
DEFAULT_MAX_LOOPS = 3

NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]
Query = Annotated[str, msgspec.Meta(max_length=LIBRARIAN.query_chars)]
Snippet = Annotated[
    str, msgspec.Meta(max_length=LIBRARIAN.snippet_chars, description="The Markdown fragment the search returned.")
]
Score = Annotated[float, msgspec.Meta(ge=-1e9, le=1e9)]
Page = Annotated[int, msgspec.Meta(ge=0, le=10_000_000)]

MissingCategory = Literal["prerequisite", "definition", "formula", "example", "condition", "term"]
"""Seed 003 §2.2's kinds of missing element, plus `term` for a key term no evidence mentions."""


class ConversationTurn(WireStruct):
    """A previous turn of the conversation, for context only."""

    role: Literal["user", "assistant", "system"]
    content: Annotated[str, msgspec.Meta(max_length=LIBRARIAN.turn_chars)]


class SearchHit(WireStruct):
    """One result the caller's search returned (PostgreSQL full-text or pgvector)."""

    document_id: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    snippet: Snippet
    page: Page | None = None
    chunk_id: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    score: Score | None = None
    retrieval: Literal["text", "vector"] | None = None
    metadata: Annotated[dict[str, Any], msgspec.Meta(max_length=LIBRARIAN.metadata_keys)] = msgspec.field(
        default_factory=dict
    )


class SearchRound(WireStruct):
    """One SEARCH the caller executed: the queries it ran and what came back, oldest round first."""

    queries_text: Annotated[list[Query], msgspec.Meta(max_length=LIBRARIAN.queries_per_round)] = msgspec.field(
        default_factory=list
    )
    queries_vector: Annotated[list[Query], msgspec.Meta(max_length=LIBRARIAN.queries_per_round)] = msgspec.field(
        default_factory=list
    )
    results: Annotated[list[SearchHit], msgspec.Meta(max_length=LIBRARIAN.hits_per_round)] = msgspec.field(
        default_factory=list
    )


class LibrarianConstraints(WireStruct):
    """Limits for the search; `max_loops` is pinned by the first call (see `max_loops`)."""

    max_loops: (
        Annotated[
            int,
            msgspec.Meta(
                ge=1,
                le=LIBRARIAN.rounds,
                description="SEARCH rounds allowed (default 3). Pinned by the first call: later calls may omit it "
                "(the pinned value holds) or repeat it; a different value is 422.",
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    max_evidence: Annotated[int, msgspec.Meta(ge=1, le=50, description="snippets in COMPLETE at most")] = 5
    max_queries: Annotated[int, msgspec.Meta(ge=1, le=16, description="queries per SEARCH, text+vector")] = 4
    timeout_ms: Annotated[int, msgspec.Meta(ge=100, le=600_000)] | None = None


class LibrarianRequest(WireStruct):
    """`POST /agent/librarian/think` body."""

    request_id: RequestId
    user_query: Annotated[str, msgspec.Meta(min_length=1, max_length=LIBRARIAN.user_query_chars)]
    subject_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    conversation: Annotated[list[ConversationTurn], msgspec.Meta(max_length=LIBRARIAN.conversation_turns)] = (
        msgspec.field(default_factory=list)
    )
    search_history: Annotated[list[SearchRound], msgspec.Meta(max_length=LIBRARIAN.rounds)] = msgspec.field(
        default_factory=list
    )
    state: StateToken | None = None
    constraints: LibrarianConstraints = msgspec.field(default_factory=LibrarianConstraints)


class MissingElement(WireStruct):
    """Something the evidence does not cover yet, and the query meant to find it."""

    category: MissingCategory
    description: Annotated[str, msgspec.Meta(max_length=LIBRARIAN.text_chars)]


class LibrarianAction(WireStruct, tag_field="action"):
    """Base of the actions; the tag is the `action` field."""


class SearchAction(LibrarianAction, tag="SEARCH"):
    """Run these queries (subject_id is enforced by the caller) and call back with the results."""

    request_id: str
    queries_text: Annotated[
        list[str],
        msgspec.Meta(
            description=(
                "Full-text searches, one per entry. An entry is key terms separated by whitespace (text without"
                " spaces is one term). A chunk is a hit when it contains at least one of the terms, compared as"
                " substrings after NFKC folding and lower-casing (no word segmentation, so Japanese works);"
                " entries are written in that form (each character lower-cased on its own, as PostgreSQL's"
                " lower() and Go's strings.ToLower do: ß and a final ς stay) and hold no control or format"
                " character, so an entry runs as written;"
                " hits containing more of the entry's terms rank first. The reference implementation,"
                " reference_orchestrator/sql/search_text.sql (PostgreSQL with pg_trgm), selects hits on the terms"
                " of three or more characters when the entry has any, and counts every term for the ranking."
            )
        ),
    ]
    queries_vector: list[str]
    filters_hint: dict[str, Any]
    rationale: str
    missing: list[MissingElement]
    state: StateToken | None
    usage: Usage


class EvidenceItem(WireStruct):
    """Evidence from one document: its pages (sorted), the snippets, a score and why it matters."""

    document_id: str
    pages: list[int]
    snippets: list[str]
    score: float
    why_relevant: str


class CompleteAction(LibrarianAction, tag="COMPLETE"):
    """The minimal, strongest, deduplicated evidence set; hand it to the synthesis step."""

    request_id: str
    evidence: list[EvidenceItem]
    coverage_notes: str
    state: StateToken | None
    usage: Usage


LibrarianResponse = SearchAction | CompleteAction | ErrorResponse


class LibrarianState(msgspec.Struct, kw_only=True):
    """What the loop needs between calls (sealed inside the state token).

    The candidate pool itself is not stored: the caller re-sends `search_history` on every
    call, and the pool is re-derived from it deterministically. `history_digest` chains the
    hashes of the rounds already seen, so history that was edited, dropped or reordered is
    detected; `max_loops` is pinned by the first call so a client cannot lift it later.
    """

    rounds_seen: int
    max_loops: int
    history_digest: str
    query_digest: str
    subject_id: str
    issued_queries: list[str] = msgspec.field(default_factory=list)
    missing: list[MissingElement] = msgspec.field(default_factory=list)
    covered: list[str] = msgspec.field(default_factory=list)
