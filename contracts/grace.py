"""GRACE wire contract (seed 002 §5, DESIGN.md §6): plan-and-execute as a stateless step API.

Protocol: call `POST /agent/grace/step` with `query` and `state: null` → the answer is one action:
`SEARCH` (run a `rag_search` step's query on the named collection and call back with `tool_result`),
`ASK_USER` (a human decision: call back with `user_response`), `COMPLETE` or `ERROR`. Every later call
sends the previous response's `state` verbatim plus exactly what that response asked for. Every
response except the shared ERROR body carries `events`, the progress records the seed streamed to
its UI; `POST /agent/grace/step/stream` sends the same records as Server-Sent Events.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.base import RequestId, WireStruct
from contracts.common import ErrorResponse, Usage
from contracts.librarian import SearchHit
from contracts.limits import GRACE
from contracts.state import StateToken

GRACE_STATE_VERSION = 1

MAX_PLAN_STEPS = GRACE.plan_steps
"""Hard cap of the contract; `planner.max_steps` in config/grace_config.yml is the working limit."""
MAX_HITS = GRACE.hits
MAX_COLLECTIONS = GRACE.collections

MAX_STEP_ID = 1_000_000
"""The largest step id; a caller's plan leaves room below it for the ids replans add (`graphs.grace.protocol`)."""
StepId = Annotated[int, msgspec.Meta(ge=1, le=MAX_STEP_ID, description="A step's id, unique within a session.")]
MAX_QUERY_CHARS = GRACE.query_chars
Text = Annotated[str, msgspec.Meta(max_length=GRACE.text_chars)]
"""Plan and result text: room for a question of the request's maximum length plus the planner's wording."""
Fraction = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Turn = Annotated[
    int,
    msgspec.Meta(
        ge=1, le=1_000_000, description="The `turn` of the action this answers (optional; checked when sent)."
    ),
]

StepAction = Literal["rag_search", "reasoning", "ask_user"]
"""What a plan step does: a search the caller runs, an answer from the gathered sources, a question to the user."""

StepStatus = Literal["success", "failed", "skipped"]

ActionDecision = Literal["SILENT", "NOTIFY", "CONFIRM", "ESCALATE"]
"""Intervention level from a confidence score (seed 002 §4.4): SILENT > NOTIFY > CONFIRM > ESCALATE."""

InterventionDecision = Literal["PROCEED", "MODIFY", "CANCEL"]

Feedback = Literal["correct", "incorrect"]
"""The user's verdict on the result shown in an ASK_USER; moves the thresholds within their bounds."""

ReplanStrategy = Literal["PARTIAL", "FULL", "FALLBACK"]

ReplanTrigger = Literal["STEP_FAILURE", "LOW_CONFIDENCE", "USER_MODIFY"]

AskKind = Literal["CONFIRM", "ESCALATE", "QUESTION", "PLAN"]
"""Why an ASK_USER was sent: an intervention (CONFIRM / ESCALATE), an `ask_user` step, or plan approval."""

EventType = Literal[
    "plan_fallback",
    "plan_created",
    "step_started",
    "step_finished",
    "step_skipped",
    "confidence",
    "decision",
    "notify",
    "user_response",
    "thresholds_adjusted",
    "replanned",
    "replan_limit",
    "fallback_answer",
    "completed",
    "cancelled",
]


# --- plan -----------------------------------------------------------------------------------------


class PlanStep(WireStruct):
    """One step of a plan (seed 002 §5). `depends_on` names earlier steps whose outputs this step uses."""

    step_id: StepId
    action: StepAction
    description: Text = ""
    query: Text = ""
    collection: Annotated[str, msgspec.Meta(max_length=128)] | None = None
    depends_on: Annotated[list[StepId], msgspec.Meta(max_length=MAX_PLAN_STEPS)] = msgspec.field(default_factory=list)
    fallback: StepAction | None = None


class ExecutionPlan(WireStruct):
    """The whole plan; `revision` counts the replans that produced it (0 = the first plan)."""

    plan_id: str
    original_query: str
    complexity: Fraction
    steps: Annotated[list[PlanStep], msgspec.Meta(min_length=1, max_length=MAX_PLAN_STEPS)]
    requires_confirmation: bool = False
    revision: Annotated[int, msgspec.Meta(ge=0, le=100)] = 0


# --- confidence -------------------------------------------------------------------------------------


class ConfidenceFactors(WireStruct):
    """The raw measurements a confidence score is computed from (seed 002 §4.4, §8.3).

    A factor that could not be measured is null (no hit carried a score; no self-evaluation) and
    drops out of the weighted average instead of counting as zero.
    """

    hit_count: Annotated[int, msgspec.Meta(ge=0)] = 0
    max_score: Fraction | None = None
    mean_score: Fraction | None = None
    score_variance: Fraction | None = None
    source_agreement: Fraction = 0.0
    llm_self_eval: Fraction | None = None


class Penalty(WireStruct):
    """A penalty that was applied: which defect, and the multiplier it cost."""

    name: Literal["zero_hits", "tool_failure"]
    multiplier: Fraction


class ConfidenceScore(WireStruct):
    """A score and its breakdown: normalised factors, the weights used, the penalties, the decision."""

    score: Fraction
    decision: ActionDecision
    step_type: StepAction
    factors: ConfidenceFactors
    normalized: dict[str, float]
    weights: dict[str, float]
    penalties: list[Penalty] = msgspec.field(default_factory=list)


class StepResult(WireStruct):
    """What one step produced (seed 002 §5); `sources` are document ids from the caller's hits."""

    step_id: StepId
    action: StepAction
    status: StepStatus
    output: str = ""
    confidence: Fraction = 0.0
    sources: list[str] = msgspec.field(default_factory=list)
    detail: ConfidenceScore | None = None
    error: str | None = None


# --- request --------------------------------------------------------------------------------------


class SearchCollection(WireStruct):
    """A collection the caller can search (the seed's Qdrant collection listing)."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    description: Text = ""


class ToolResult(WireStruct):
    """The caller's answer to a SEARCH: its hits, and `error` if the search failed (partly, when hits came back)."""

    step_id: StepId
    hits: Annotated[list[SearchHit], msgspec.Meta(max_length=MAX_HITS)] = msgspec.field(default_factory=list)
    error: Text | None = None
    turn: Turn | None = None


class InterventionResponse(WireStruct):
    """The user's answer to an ASK_USER (seed 002 §8.4)."""

    decision: InterventionDecision
    input: Annotated[str, msgspec.Meta(max_length=GRACE.user_input_chars)] | None = None
    feedback: Feedback | None = None
    step_id: StepId | None = None
    turn: Turn | None = None


class GraceConstraints(WireStruct):
    """Per-request limits."""

    timeout_ms: Annotated[int, msgspec.Meta(ge=100, le=600_000)] | None = None


class GraceRequest(WireStruct):
    """`POST /agent/grace/step` body.

    First call: `query` (and optionally `collections` to choose from, your own `plan_steps` in
    dependency order, `confirm_plan` to approve the plan before it runs), `state: null`. Later calls:
    the previous `state` verbatim plus `tool_result` (after SEARCH) or `user_response` (after ASK_USER).
    """

    request_id: RequestId | None = None
    query: Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)] | None = None
    state: StateToken | None = None
    tool_result: ToolResult | None = None
    user_response: InterventionResponse | None = None
    collections: Annotated[list[SearchCollection], msgspec.Meta(min_length=1, max_length=MAX_COLLECTIONS)] | None = None
    plan_steps: Annotated[list[PlanStep], msgspec.Meta(min_length=1, max_length=MAX_PLAN_STEPS)] | None = None
    confirm_plan: bool = False
    constraints: GraceConstraints = msgspec.field(default_factory=GraceConstraints)


# --- response -------------------------------------------------------------------------------------


class GraceEvent(WireStruct):
    """One progress record; `index` counts every event of the session, so a UI can order and de-duplicate."""

    index: int
    type: EventType
    message: str
    step_id: int | None = None
    status: StepStatus | None = None
    confidence: float | None = None
    decision: ActionDecision | None = None
    strategy: ReplanStrategy | None = None


class GraceSource(WireStruct):
    """A source the answer cites: one of the caller's hits, as it was sent, its snippet as the state keeps it.

    The state keeps each hit's first `executor.snippet_chars` characters (1,200 by default,
    `config/grace_config.yml`), so a longer snippet comes back cut there.
    """

    document_id: str
    snippet: str
    step_id: int
    page: int | None = None
    chunk_id: str | None = None
    score: float | None = None


class GraceAction(WireStruct, tag_field="action"):
    """Base of the actions; the tag is the `action` field."""


class GraceSearchAction(GraceAction, tag="SEARCH"):
    """Run `query` on `collection` (top `top_k`) and call back with `tool_result.step_id = step_id`.

    `turn` numbers the actions of a session; echoing it as `tool_result.turn` makes the server refuse
    an answer sent with any other state than this action's.
    """

    request_id: str
    turn: int
    step_id: int
    query: str
    collection: str
    keywords: list[str]
    top_k: int
    rationale: str
    plan: ExecutionPlan
    events: list[GraceEvent]
    state: StateToken | None
    usage: Usage


class GraceAskUserAction(GraceAction, tag="ASK_USER"):
    """Ask the user; call back with `user_response` (one of `options`; `input` required for ESCALATE/QUESTION).

    Echo `turn` (and `step.step_id`) in `user_response` to bind the answer to this question.
    """

    request_id: str
    turn: int
    kind: AskKind
    question: str
    options: list[InterventionDecision]
    step: PlanStep | None
    result: StepResult | None
    confidence: ConfidenceScore | None
    plan: ExecutionPlan
    events: list[GraceEvent]
    state: StateToken | None
    usage: Usage


class GraceCompleteAction(GraceAction, tag="COMPLETE"):
    """The final answer (`status` says whether the plan ran through, was cancelled, or ended early)."""

    request_id: str
    status: Literal["completed", "partial", "cancelled"]
    answer: str
    confidence: float
    sources: list[GraceSource]
    history: list[StepResult]
    plan: ExecutionPlan
    events: list[GraceEvent]
    state: StateToken | None
    usage: Usage


GraceResponse = GraceSearchAction | GraceAskUserAction | GraceCompleteAction | ErrorResponse


# --- state ----------------------------------------------------------------------------------------


class Thresholds(msgspec.Struct, kw_only=True):
    """The intervention thresholds in force for this session (feedback moves them within bounds)."""

    silent: float
    notify: float
    confirm: float


class Evidence(msgspec.Struct, kw_only=True):
    """A hit kept for later reasoning: the caller's fields, snippet trimmed to the configured length."""

    step_id: int
    document_id: str
    snippet: str
    page: int | None = None
    chunk_id: str | None = None
    score: float | None = None


class UserInput(msgspec.Struct, kw_only=True):
    """Text the user supplied (an ESCALATE answer or an `ask_user` step's answer), usable as context."""

    step_id: int
    text: str


class Pending(msgspec.Struct, kw_only=True):
    """What the last response asked the outside world for; the next request must answer exactly this."""

    kind: Literal["SEARCH", "ASK_USER"]
    step_id: int | None
    ask_kind: AskKind | None = None
    turn: int


class Citation(msgspec.Struct, kw_only=True):
    """Which kept evidence (indices into `GraceState.evidence`) a reasoning step's answer cites."""

    step_id: int
    evidence: list[int]


class ReplanRecord(msgspec.Struct, kw_only=True):
    """One replan: why, how, and from which step."""

    trigger: ReplanTrigger
    strategy: ReplanStrategy
    step_id: int | None
    turn: int


class GraceState(msgspec.Struct, kw_only=True):
    """What a session needs between calls (sealed inside the state token).

    The server re-derives what it enforces from this and checks that it is consistent (the replan
    count is the length of `replans` and must equal `plan.revision`; the pending step must be in the
    plan and unanswered), so an edited state is refused rather than trusted.
    """

    query: str
    collections: list[SearchCollection]
    plan: ExecutionPlan
    results: list[StepResult] = msgspec.field(default_factory=list)
    evidence: list[Evidence] = msgspec.field(default_factory=list)
    citations: list[Citation] = msgspec.field(default_factory=list)
    user_inputs: list[UserInput] = msgspec.field(default_factory=list)
    thresholds: Thresholds
    replans: list[ReplanRecord] = msgspec.field(default_factory=list)
    pending: Pending | None = None
    plan_confirmed: bool = False
    max_step_id: int
    turn: int = 0
    event_count: int = 0
    done: bool = False
