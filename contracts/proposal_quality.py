"""Proposal-quality wire contract (DESIGN.md §6, seed 004 §2, §6, §7): Organizer/Advisor reports and their gate.

Flow: an Organizer or Advisor report (JSON) → validator (Must rules = `errors`, Should rules =
`warnings`) → self-correction (at most 2 re-asks) → render, only when `ok`. The report types keep
the seed's field names (snake_case); the run request body is camelCase, as the seed defines it
(`dashboard`, `focusNodeId`, `userIntent`, `constraints`).

Endpoints: `POST /api/proposal-quality/validate` (`ProposalValidateRequest` → `ProposalValidateResponse`),
`POST /api/organizer/run` and `POST /api/advisor/run` (`ProposalRunRequest` → `ProposalRunResponse`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from contracts.base import RequestId, WireStruct
from contracts.common import Usage
from contracts.limits import PROPOSAL

ReportKind = Literal["organizer", "advisor"]
"""Which report a request is about: the Organizer's tidy-up proposals or the Advisor's options."""

NodeId = Annotated[str, msgspec.Meta(min_length=1, max_length=256, description="A dashboard node id.")]
ShortText = Annotated[str, msgspec.Meta(max_length=PROPOSAL.note_chars)]

MAX_TRAYS = PROPOSAL.trays
MAX_NODES_PER_TRAY = PROPOSAL.nodes_per_tray
MAX_VALID_IDS = PROPOSAL.valid_ids
MAX_CORRECTIONS = 2
"""Re-asks after the first generation (seed 004 §4.1: 最大 2 回まで再生成)."""


# --- reports (seed 004 §2) ------------------------------------------------------------------------


class ReportStruct(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base of the report types: optional fields (`?` in the seed) are left out, never sent as null."""


class OrganizerReportChild(ReportStruct):
    """A child node the Organizer suggests when decomposing a node."""

    title: str
    context: str
    suggested_status: str | msgspec.UnsetType = msgspec.UNSET


class OrganizerDecompositionProposal(ReportStruct):
    """Split `target_node_id` into at least two children."""

    target_node_id: str
    target_title: str
    reason: str
    suggested_children: list[OrganizerReportChild]


class OrganizerGroupingProposal(ReportStruct):
    """Put these nodes under one label."""

    group_label: str
    reason: str
    node_ids: list[str]


class OrganizerRelationProposal(ReportStruct):
    """Connect two nodes with a relation."""

    from_node_id: str
    to_node_id: str
    relation_type: str
    reason: str


class OrganizerReport(ReportStruct):
    """The Organizer's proposals for tidying the dashboard; it proposes, a human applies."""

    decomposition_proposals: list[OrganizerDecompositionProposal]
    grouping_proposals: list[OrganizerGroupingProposal]
    relation_proposals: list[OrganizerRelationProposal]
    summary: str


class AdvisorOption(ReportStruct, kw_only=True):
    """One way forward, with the four required items (next_action, necessary_info, criteria_note, risks)."""

    label: str
    description: str | msgspec.UnsetType = msgspec.UNSET
    pros: list[str] | msgspec.UnsetType = msgspec.UNSET
    cons: list[str] | msgspec.UnsetType = msgspec.UNSET
    next_action: str
    necessary_info: str
    criteria_note: str
    risks: list[str]
    suggested_status: str | msgspec.UnsetType = msgspec.UNSET


class AdvisorCriterion(ReportStruct):
    """Something to weigh the options by."""

    name: str
    description: str


class AdvisorReport(ReportStruct, kw_only=True):
    """The Advisor's options for one node: it lays the choices out and leaves the choice to a human."""

    target_node_id: str
    target_title: str
    current_status: str
    options: list[AdvisorOption]
    criteria: list[AdvisorCriterion] | msgspec.UnsetType = msgspec.UNSET
    next_decision: str
    summary: str


class ValidationResult(WireStruct):
    """The validator's verdict (seed 004 §2.3): `ok` exactly when `errors` (Must violations) is empty."""

    ok: bool
    errors: list[str]
    warnings: list[str]


# --- the dashboard the run endpoints take (seed 004 §7) -------------------------------------------


class DashboardNode(WireStruct, forbid_unknown_fields=False):
    """A node as `GET /api/dashboard` lists it; `parentId` makes it a child of that node (the Advisor uses it).

    Its other fields are accepted and ignored: the one exception to the contract's strictness, on purpose,
    because a dashboard is another system's document passed through as it is (nodes carry estimates,
    assignees, dates…), not parameters a caller spells.
    """

    id: NodeId
    title: Annotated[str, msgspec.Meta(max_length=PROPOSAL.title_chars)] = ""
    status: Annotated[str, msgspec.Meta(max_length=200)] = ""
    parent_id: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=256,
                description=(
                    "The node this one is a child of, if any. No chain of parents may come back to a node "
                    "(422); a parent not on the dashboard leaves the node without one on it."
                ),
            ),
        ]
        | None
    ) = msgspec.field(default=None, name="parentId")


Tray = Annotated[list[DashboardNode], msgspec.Meta(max_length=MAX_NODES_PER_TRAY)]

Trays = (
    Annotated[dict[Annotated[str, msgspec.Meta(max_length=200)], Tray], msgspec.Meta(max_length=MAX_TRAYS)]
    | Annotated[list[Tray], msgspec.Meta(max_length=MAX_TRAYS)]
)
"""Either `{tray name: [node, ...]}` or `[[node, ...], ...]`: each tray is an array of nodes."""


class Dashboard(WireStruct):
    """`GET /api/dashboard`'s `{trays}`; the valid node ids are every node id in every tray."""

    trays: Trays


# --- requests and responses -----------------------------------------------------------------------


class ProposalValidateRequest(WireStruct, kw_only=True):
    """`POST /api/proposal-quality/validate`: check a report produced anywhere against the same rules.

    The valid node ids come either as `validNodeIds` or from a `dashboard` (exactly one of them).
    """

    request_id: RequestId | None = None
    kind: ReportKind
    report: Annotated[dict[str, Any], msgspec.Meta(description="The parsed OrganizerReport / AdvisorReport JSON.")]
    valid_node_ids: Annotated[list[NodeId], msgspec.Meta(max_length=MAX_VALID_IDS)] | None = msgspec.field(
        default=None, name="validNodeIds"
    )
    dashboard: Dashboard | None = None


class ProposalValidateResponse(ValidationResult, tag_field="action", tag="VALIDATION"):
    """The `ValidationResult` plus the request id and usage (no model is called: `llm_calls` is 0).

    Tagged `action: VALIDATION` so a client tells it from the ERROR body by one field, as with every agent.
    """

    request_id: str
    usage: Usage


class ProposalRunConstraints(WireStruct):
    """Limits for one run; they can lower the seed's retry count, never raise it."""

    timeout_ms: Annotated[int, msgspec.Meta(ge=100, le=600_000)] | None = None
    max_corrections: Annotated[
        int, msgspec.Meta(ge=0, le=MAX_CORRECTIONS, description="re-asks after a report with errors")
    ] = MAX_CORRECTIONS
    notes: Annotated[
        list[ShortText],
        msgspec.Meta(max_length=PROPOSAL.notes, description="Free-text constraints the proposals should respect."),
    ] = msgspec.field(default_factory=list)


class ProposalRunRequest(WireStruct, kw_only=True):
    """`POST /api/organizer/run` and `POST /api/advisor/run` (camelCase, as the seed defines it)."""

    request_id: RequestId | None = None
    dashboard: Dashboard
    focus_node_id: NodeId | None = msgspec.field(default=None, name="focusNodeId")
    user_intent: Annotated[str, msgspec.Meta(max_length=PROPOSAL.user_intent_chars)] | None = msgspec.field(
        default=None, name="userIntent"
    )
    constraints: ProposalRunConstraints = msgspec.field(default_factory=ProposalRunConstraints)


class RenderedItem(WireStruct):
    """One proposal or option, display-ready: a heading, its lines and the node ids it concerns."""

    heading: str
    lines: list[str]
    node_ids: list[str] = msgspec.field(default_factory=list)


class RenderedSection(WireStruct):
    """A block of the display (e.g. the decomposition proposals, the options)."""

    key: str
    heading: str
    items: list[RenderedItem]


class Rendered(WireStruct):
    """What the UI shows for a report that passed the validator: structured sections and the same as Markdown."""

    kind: ReportKind
    title: str
    summary: str
    sections: list[RenderedSection]
    markdown: str


class ProposalAttempt(WireStruct):
    """One generation of the self-correction loop: its verdict, for the caller's logs."""

    attempt: int
    ok: bool
    errors: list[str]
    warnings: list[str]


class ProposalRunResponse(WireStruct, tag_field="action", tag="REPORT"):
    """`{ok, report, errors, warnings, rendered?, attempts}` (seed 004 §7), with request id and usage.

    Tagged `action: REPORT` so a client tells it from the ERROR body by one field, as with every agent.

    `report` is the validated report when `ok`; otherwise the last rejected attempt (with any node id
    that is not on the dashboard removed), or null when no attempt was a JSON object. `rendered` is
    present only when `ok`.
    """

    request_id: str
    ok: bool
    report: dict[str, Any] | None
    errors: list[str]
    warnings: list[str]
    attempts: int
    attempt_log: list[ProposalAttempt]
    usage: Usage
    rendered: Rendered | msgspec.UnsetType = msgspec.UNSET
