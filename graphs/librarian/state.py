"""The Librarian graph's working state for one think step (never persisted).

Every key is written by exactly one node, so no reducers are needed; nothing relies on
TypedDict defaults (LangGraph ignores them).
"""

from __future__ import annotations

from typing import TypedDict

from contracts.common import ErrorResponse
from contracts.librarian import CompleteAction, LibrarianRequest, LibrarianState, SearchAction
from graphs.librarian.assessment import Assessment
from graphs.librarian.candidates import CandidatePool
from graphs.librarian.llm_step import LLMDecision
from graphs.librarian.question import QuestionProfile


class LibrarianGraphState(TypedDict, total=False):
    """Input (`request`, `prior`) and what each node adds."""

    request: LibrarianRequest
    prior: LibrarianState | None
    loop_limit: int
    profile: QuestionProfile
    issued: list[str]
    pool: CandidatePool
    assessment: Assessment
    decision: LLMDecision | None
    outcome: SearchAction | CompleteAction | ErrorResponse
