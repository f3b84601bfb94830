"""The actions a GRACE step answers with, built in one place (seed 002 §5: SEARCH, ASK_USER, COMPLETE; ERROR).

Each builder returns the session as it must be sealed (waiting for exactly the answer the action asks
for, or done) and a `Reply`: the action with every field but the three known only at the end (`nodes._respond`) — the
step's numbered `events`, the request's `usage` and the next `state` token — which `finalize` adds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from contracts.common import ErrorResponse, Usage
from contracts.grace import (
    AskKind,
    GraceAskUserAction,
    GraceCompleteAction,
    GraceEvent,
    GraceSearchAction,
    GraceSource,
    GraceState,
    Pending,
    PlanStep,
    StepResult,
)
from graphs.grace.final_answer import FinalAnswer
from graphs.grace.intervention import OPTIONS
from graphs.text.tokenize import terms

Outcome = GraceSearchAction | GraceAskUserAction | GraceCompleteAction | ErrorResponse
"""What one step request answers with."""


@dataclass(frozen=True)
class Reply:
    """An action with its fields set except `events`, `usage` and `state` (an ERROR carries no events)."""

    action: type[Outcome]
    fields: dict[str, Any]

    def finalize(self, *, events: list[GraceEvent], usage: Usage, state: str) -> Outcome:
        """The action as sent: these events, this usage, the next state's token."""
        added: dict[str, Any] = {"usage": usage, "state": state}
        if self.action is not ErrorResponse:
            added["events"] = events
        return self.action(**self.fields, **added)


def search(session: GraceState, step: PlanStep, *, request_id: str, top_k: int) -> tuple[GraceState, Reply]:
    """SEARCH for a `rag_search` step: the caller runs it and answers with `tool_result`."""
    assert step.collection is not None  # planner.fill_collections: every rag_search step of a plan names one
    waiting = msgspec.structs.replace(session, pending=Pending(kind="SEARCH", step_id=step.step_id, turn=session.turn))
    fields = {
        "request_id": request_id,
        "turn": session.turn,
        "step_id": step.step_id,
        "query": step.query,
        "collection": step.collection,
        "keywords": terms(step.query),
        "top_k": top_k,
        "rationale": step.description,
        "plan": session.plan,
    }
    return waiting, Reply(GraceSearchAction, fields)


def ask_user(
    session: GraceState,
    *,
    request_id: str,
    kind: AskKind,
    question: str,
    step: PlanStep | None = None,
    result: StepResult | None = None,
) -> tuple[GraceState, Reply]:
    """ASK_USER: approve the plan (PLAN), answer a step (QUESTION), or judge a result (CONFIRM / ESCALATE)."""
    pending = Pending(kind="ASK_USER", step_id=step.step_id if step else None, ask_kind=kind, turn=session.turn)
    fields = {
        "request_id": request_id,
        "turn": session.turn,
        "kind": kind,
        "question": question,
        "options": list(OPTIONS),
        "step": step,
        "result": result,
        "confidence": result.detail if result is not None else None,
        "plan": session.plan,
    }
    return msgspec.structs.replace(session, pending=pending), Reply(GraceAskUserAction, fields)


def complete(session: GraceState, final: FinalAnswer, *, request_id: str) -> tuple[GraceState, Reply]:
    """COMPLETE with the final answer, its confidence, the cited sources and the step history."""
    done = msgspec.structs.replace(session, done=True, pending=None)
    sources = [
        GraceSource(
            document_id=e.document_id,
            snippet=e.snippet,
            step_id=e.step_id,
            page=e.page,
            chunk_id=e.chunk_id,
            score=e.score,
        )
        for e in final.sources
    ]
    fields = {
        "request_id": request_id,
        "status": final.status,
        "answer": final.text,
        "confidence": final.confidence,
        "sources": sources,
        "history": list(done.results),
        "plan": done.plan,
    }
    return done, Reply(GraceCompleteAction, fields)


def loop_limit(session: GraceState, *, request_id: str, max_replans: int) -> tuple[GraceState, Reply]:
    """ERROR LOOP_LIMIT: the replan limit was reached with nothing usable gathered (the session is over)."""
    done = msgspec.structs.replace(session, done=True, pending=None)
    message = f"nothing usable was gathered before the replan limit ({max_replans}) was reached"
    return done, Reply(ErrorResponse, {"request_id": request_id, "error_type": "LOOP_LIMIT", "message": message})
