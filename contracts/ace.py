"""ACE wire contract (seeds 000 and 001, DESIGN.md §6): the playbook, hybrid search and the three agents.

The service is stateless: the playbook travels in the request and the updated playbook in the response.
Field names are the seeds'. Limits are part of the contract so that msgspec rejects oversized or hostile
input with a 422 and a JSON path before any agent code runs; rules that need the configuration (known
sections) or the whole playbook (duplicate ids) are checked by the agents and answered with a 400.

Endpoints: `POST /agent/ace/search`, `/agent/ace/generate`, `/agent/ace/reflect`, `/agent/ace/curate`,
seed 000 §11's `POST /workflow/run`, and the stored playbooks in the official ACE text format:
`PUT`/`GET /playbooks/{dataset}` and `GET /playbooks`.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Literal

import msgspec

from contracts.base import RequestId, WireStruct, anchored
from contracts.common import EngineName, ErrorResponse, Usage
from contracts.limits import ACE

MAX_BULLETS = ACE.bullets
"""Most bullets a playbook may hold on the wire (the real AppWorld playbooks hold 8 to 359)."""
MAX_CONTENT_CHARS = ACE.bullet_chars
MAX_TEXT_CHARS = ACE.text_chars
MAX_USED_BULLETS = ACE.used_bullets
MAX_BULLET_NUMBER = 10**12
"""The largest id number a playbook may issue (`metadata.last_bullet_number`); past it no bullet can be added."""

_PRINTABLE = r"[^\s\x00-\x1f\x7f](?:[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f])?"
"""No control characters anywhere, and no whitespace at either end (`"general "` is not `"general"`)."""
SECTION_NAME_PATTERN = anchored(_PRINTABLE, means="text without control characters or whitespace at either end")
DATASET_NAME_PATTERN = anchored(
    r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", means="a letter or digit, then up to 63 letters, digits, '_' or '-'"
)
"""Also the stored playbooks' file names (`graphs/ace/playbook_store.py`)."""

BulletId = Annotated[
    str,
    msgspec.Meta(
        pattern=anchored(
            r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}",
            means="a letter or digit, then up to 127 of them or '_', '.', ':', '-'",
        ),
        description="`<section-prefix>-<nnnnn>` for bullets the curator creates, e.g. `shr-00001`.",
    ),
]
SectionName = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=120,
        pattern=SECTION_NAME_PATTERN,
        description="A section of `config/sections.yaml` for the dataset (snake_case of the ACE heading).",
    ),
]
DatasetName = Annotated[
    str,
    msgspec.Meta(
        pattern=DATASET_NAME_PATTERN,
        description="Selects the section definitions, prompt overrides and (for /workflow/run) the stored playbook.",
    ),
]
SectionTitle = Annotated[str, msgspec.Meta(max_length=200, pattern=anchored(rf"(?:{_PRINTABLE})?"))]
Counter = Annotated[int, msgspec.Meta(ge=0, le=1_000_000_000)]
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT_CHARS)]
ShortText = Annotated[str, msgspec.Meta(max_length=MAX_CONTENT_CHARS)]
LongText = Annotated[str, msgspec.Meta(max_length=MAX_TEXT_CHARS)]
ReportText = Annotated[str, msgspec.Meta(max_length=ACE.report_chars)]
Keyword = Annotated[str, msgspec.Meta(max_length=200)]
QueryText = Annotated[str, msgspec.Meta(min_length=1, max_length=ACE.query_chars)]
Score = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
TopK = Annotated[int, msgspec.Meta(ge=1, le=200)]
BulletTag = Literal["helpful", "harmful", "neutral"]
DeltaType = Literal["ADD", "UPDATE", "DELETE"]


def confidence(helpful: int, harmful: int) -> float:
    """Seed 000 §1: helpful / (helpful + harmful), and 0.5 for a bullet nobody has voted on yet."""
    total = helpful + harmful
    return 0.5 if total == 0 else helpful / total


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Bullet(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One piece of learned guidance in a playbook.

    `confidence_score` is derived, never trusted: whatever a client sends for it is replaced with the
    value computed from `helpful` and `harmful` whenever a Bullet is built, decoded or replaced, so it
    cannot disagree with the counters. The struct is frozen for the same reason (and so derives from
    `msgspec.Struct` directly: a frozen struct cannot extend the non-frozen `WireStruct`), and repeats
    `WireStruct`'s `forbid_unknown_fields`: a misspelled `helpfull: 7` is a 422, not seven votes lost.
    """

    id: BulletId
    section: SectionName
    content: Content
    searchable_text: ShortText = ""
    keywords: Annotated[list[Keyword], msgspec.Meta(max_length=64)] = msgspec.field(default_factory=list)
    helpful: Counter = 0
    harmful: Counter = 0
    source_trajectory: Annotated[str, msgspec.Meta(max_length=2_000)] = ""
    confidence_score: Annotated[
        float, msgspec.Meta(description="helpful / (helpful + harmful); 0.5 when both are 0. Recomputed on input.")
    ] = 0.5

    def __post_init__(self) -> None:
        """Recompute the derived score (runs on construction, decoding, `convert` and `structs.replace`)."""
        msgspec.structs.force_setattr(self, "confidence_score", confidence(self.helpful, self.harmful))


class PlaybookMetadata(WireStruct):
    """When the playbook was made and changed, plus what id allocation and text export need.

    `last_bullet_number` is the id high-water mark: the largest number ever issued in a bullet id, so a
    deleted bullet's id is never handed out again. `section_titles` keeps the official ACE heading of
    each section (e.g. `APIs TO USE FOR SPECIFIC INFORMATION`) so text export reproduces it, empty
    sections included.
    """

    created_at: datetime.datetime = msgspec.field(default_factory=_utc_now)
    updated_at: datetime.datetime = msgspec.field(default_factory=_utc_now)
    last_bullet_number: Annotated[int, msgspec.Meta(ge=0, le=MAX_BULLET_NUMBER)] = 0
    section_titles: Annotated[dict[SectionName, SectionTitle], msgspec.Meta(max_length=200)] = msgspec.field(
        default_factory=dict
    )


class Playbook(WireStruct):
    """The bullets of one dataset, in order; at most `maxItems` (the ACE `bullets` limit of `contracts/limits.py`)."""

    metadata: PlaybookMetadata = msgspec.field(default_factory=PlaybookMetadata)
    bullets: Annotated[list[Bullet], msgspec.Meta(max_length=MAX_BULLETS)] = msgspec.field(default_factory=list)


class DeltaContextItem(WireStruct):
    """One change the curator makes: ADD a bullet to `section`, UPDATE or DELETE bullet `bullet_id`.

    For ADD the server assigns `bullet_id` (a given one is ignored); UPDATE and DELETE must name a bullet
    of the playbook.
    """

    type: DeltaType
    section: SectionName
    bullet_id: BulletId | None = None
    content: ShortText = ""
    reasoning: ShortText = ""


class SearchQuery(WireStruct):
    """Seed 000 §3: what to look for, how many results, and which bullets may be returned."""

    query_text: QueryText
    top_k: TopK = 10
    section_filter: Annotated[list[SectionName], msgspec.Meta(max_length=200)] | None = None
    min_confidence: Score = 0.3


class SearchResult(WireStruct):
    """One hit: both scores min-max normalised over the candidates, combined = α·vector + (1−α)·bm25."""

    bullet: Bullet
    vector_score: float
    bm25_score: float
    combined_score: float


class Trajectory(WireStruct):
    """What the generator did for one query: its answer, its reasoning and the bullets it used."""

    query: QueryText
    dataset: DatasetName = "default"
    generated_answer: LongText = ""
    reasoning_steps: Annotated[list[ShortText], msgspec.Meta(max_length=ACE.reasoning_steps)] = msgspec.field(
        default_factory=list
    )
    used_bullet_ids: Annotated[
        list[Annotated[str, msgspec.Meta(max_length=200)]], msgspec.Meta(max_length=MAX_USED_BULLETS)
    ] = msgspec.field(default_factory=list)


class Insight(WireStruct):
    """Seed 001: one lesson the reflector drew from a trajectory."""

    reasoning: ShortText
    error_identification: ShortText
    root_cause_analysis: ShortText
    correct_approach: ShortText
    key_insight: ShortText


class BulletEvaluation(WireStruct):
    """Seed 001: whether a bullet the generator used helped, hurt or did not matter."""

    bullet_id: Annotated[str, msgspec.Meta(max_length=200)]
    tag: BulletTag
    reason: ShortText = ""


class ReflectionResult(WireStruct):
    """Seed 001: the reflector's output for one trajectory."""

    insights: Annotated[list[Insight], msgspec.Meta(max_length=ACE.insights)]
    bullet_evaluations: Annotated[list[BulletEvaluation], msgspec.Meta(max_length=MAX_USED_BULLETS)]
    trajectory_query: Annotated[str, msgspec.Meta(max_length=ACE.query_chars)]
    trajectory_dataset: DatasetName
    iteration_count: Annotated[int, msgspec.Meta(ge=0, le=100)] = 1


class AceConstraints(WireStruct):
    """The request's time budget (capped by the server's REQUEST_TIMEOUT_MS)."""

    timeout_ms: Annotated[int, msgspec.Meta(ge=100, le=600_000)] | None = None


# --- requests -------------------------------------------------------------------------------------


class AceSearchRequest(WireStruct):
    """`POST /agent/ace/search`: hybrid search over the playbook in the request."""

    query: SearchQuery
    playbook: Playbook
    dataset: DatasetName = "default"
    alpha: Annotated[float, msgspec.Meta(ge=0.0, le=1.0, description="vector weight; default SEARCH_ALPHA")] | None = (
        None
    )
    request_id: RequestId | None = None
    constraints: AceConstraints = msgspec.field(default_factory=AceConstraints)


class AceGenerateRequest(WireStruct):
    """`POST /agent/ace/generate`: answer `query` with the playbook's most relevant bullets."""

    query: QueryText
    playbook: Playbook
    dataset: DatasetName = "default"
    top_k: TopK = 5
    section_filter: Annotated[list[SectionName], msgspec.Meta(max_length=200)] | None = None
    min_confidence: Score = 0.3
    request_id: RequestId | None = None
    constraints: AceConstraints = msgspec.field(default_factory=AceConstraints)


class AceReflectRequest(WireStruct):
    """`POST /agent/ace/reflect`: analyse a trajectory against the ground truth and the test report.

    `dataset` defaults to the trajectory's; it selects `prompts/reflector/{dataset}.txt` when that exists.
    """

    trajectory: Trajectory
    playbook: Playbook
    ground_truth: ReportText = ""
    test_report: ReportText = ""
    dataset: DatasetName | None = None
    max_iterations: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1
    request_id: RequestId | None = None
    constraints: AceConstraints = msgspec.field(default_factory=AceConstraints)


class AceCurateRequest(WireStruct):
    """`POST /agent/ace/curate`: turn a reflection into delta items and apply them to the playbook.

    `deltas` are extra changes the caller proposes, merged after the curator's own under the same rules
    (they must name existing bullets and known sections, or the request is rejected). `trajectory`, when
    given, lets the server check that every evaluation names a bullet the trajectory used.
    """

    reflection: ReflectionResult
    playbook: Playbook
    dataset: DatasetName | None = None
    trajectory: Trajectory | None = None
    deltas: Annotated[list[DeltaContextItem], msgspec.Meta(max_length=ACE.deltas)] = msgspec.field(default_factory=list)
    max_bullets: (
        Annotated[
            int,
            msgspec.Meta(
                ge=1, le=MAX_BULLETS, description=f"size budget, default {MAX_BULLETS}; prunes lowest confidence"
            ),
        ]
        | None
    ) = None
    dedup_threshold: (
        Annotated[float, msgspec.Meta(gt=0.0, le=1.0, description="default ACE_DEDUP_THRESHOLD")] | None
    ) = None
    request_id: RequestId | None = None
    constraints: AceConstraints = msgspec.field(default_factory=AceConstraints)


class WorkflowRequest(WireStruct):
    """`POST /workflow/run` (seed 000 §11): load the stored playbook → search → generate.

    With `ground_truth` or `test_report` the run goes on to reflect and curate; with `save: true` the
    curated playbook replaces the stored one (atomically). Only a dataset that is already stored can be
    saved into: requests update playbooks, they never create files.
    """

    query: QueryText
    dataset: DatasetName = "appworld"
    ground_truth: ReportText | None = None
    test_report: ReportText | None = None
    save: bool = False
    request_id: RequestId | None = None
    constraints: AceConstraints = msgspec.field(default_factory=AceConstraints)


MAX_PLAYBOOK_TEXT_CHARS = 64 * 1024 * 1024
"""An imported text's limit before parsing (the body limit, MAX_BODY_BYTES, is usually lower)."""


class PlaybookImportRequest(WireStruct):
    """`PUT /playbooks/{dataset}`: store the official ACE text format as the dataset's playbook.

    Not a JSON body: the request runner builds it from the path (`dataset`), the query (`allow_empty`)
    and the `text/plain` body (`text`).
    """

    dataset: DatasetName
    text: Annotated[str, msgspec.Meta(max_length=MAX_PLAYBOOK_TEXT_CHARS)]
    allow_empty: Annotated[
        bool, msgspec.Meta(description="let a text with no bullets replace the stored playbook (default: refused)")
    ] = False


class PlaybookExportRequest(WireStruct):
    """`GET /playbooks/{dataset}`: the stored playbook of `dataset` as ACE text."""

    dataset: DatasetName


class PlaybookListRequest(WireStruct):
    """`GET /playbooks`: the datasets that have a stored playbook."""


# --- responses ------------------------------------------------------------------------------------


class AceAction(WireStruct, tag_field="action"):
    """Base of the ACE responses; the tag is the `action` field, as for every endpoint's ERROR body."""


class SearchResultsAction(AceAction, tag="RESULTS"):
    """Hybrid search results, best first, at most `top_k`."""

    request_id: str
    results: list[SearchResult]
    candidates: int
    usage: Usage


class AnswerAction(AceAction, tag="ANSWER"):
    """The generator's answer, its trajectory (for the reflector) and the search results it was shown."""

    request_id: str
    answer: str
    trajectory: Trajectory
    search_results: list[SearchResult]
    produced_by: EngineName
    usage: Usage


class ModelProblem(WireStruct):
    """Why the reflector's model gave nothing (seed 001: the result is then empty, never an exception)."""

    error_type: Literal["MODEL_FAILURE", "TIMEOUT"]
    message: str


class ReflectionAction(AceAction, tag="REFLECTION"):
    """The reflection, the used ids that were not in the playbook (skipped) and any model problem."""

    request_id: str
    reflection: ReflectionResult
    skipped_bullet_ids: list[str]
    model_problem: ModelProblem | None
    produced_by: EngineName
    usage: Usage


class CuratedAction(AceAction, tag="CURATED"):
    """The delta items as applied (ADD ids filled in, near-duplicate ADDs turned into UPDATEs) and the new playbook."""

    request_id: str
    deltas: list[DeltaContextItem]
    playbook: Playbook
    pruned_bullet_ids: list[str]
    notes: list[str]
    produced_by: EngineName
    usage: Usage


class WorkflowResponse(AceAction, tag="COMPLETE"):
    """Seed 000 §11's `llm_response` and `search_results_count`, plus what a learning run did."""

    request_id: str
    llm_response: str
    search_results_count: int
    used_bullet_ids: list[str]
    reflection: ReflectionResult | None
    deltas: list[DeltaContextItem]
    playbook_saved: bool
    notes: list[str]
    """What the merge decided besides the deltas: near-duplicates refined, contradictions kept apart, skips."""
    produced_by: EngineName
    usage: Usage


class PlaybookStoredAction(AceAction, tag="STORED"):
    """What `PUT /playbooks/{dataset}` stored: counts, the sections in text order, the id high-water mark."""

    request_id: str
    dataset: str
    bullets: int
    sections: list[str]
    last_bullet_number: int
    replaced: bool
    """Whether a stored playbook was replaced (False: the dataset is new)."""


class PlaybookListAction(AceAction, tag="PLAYBOOKS"):
    """The datasets with a stored playbook, sorted (what `/workflow/run` and `GET /playbooks/{dataset}` serve)."""

    request_id: str
    datasets: list[str]


AceSearchResponse = SearchResultsAction | ErrorResponse
AceGenerateResponse = AnswerAction | ErrorResponse
AceReflectResponse = ReflectionAction | ErrorResponse
AceCurateResponse = CuratedAction | ErrorResponse
WorkflowRunResponse = WorkflowResponse | ErrorResponse
PlaybookImportResponse = PlaybookStoredAction | ErrorResponse
PlaybookListResponse = PlaybookListAction | ErrorResponse
