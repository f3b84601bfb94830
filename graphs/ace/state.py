"""The working state of the ACE graphs for one request (never persisted).

The four graphs (generator, reflector, curator, workflow) share one state type so their nodes compose:
the workflow runs the generator's, reflector's and curator's nodes in one pass. Each `prepare_*` node
turns its request into the common keys; every other key is written by one node at a time (the reflect
loop rewrites its own), so no reducers are needed; nothing relies on TypedDict defaults.
"""

from __future__ import annotations

from typing import TypedDict

from contracts.ace import (
    AceCurateRequest,
    AceGenerateRequest,
    AceReflectRequest,
    AnswerAction,
    Bullet,
    BulletEvaluation,
    CuratedAction,
    DeltaContextItem,
    Insight,
    ModelProblem,
    Playbook,
    ReflectionAction,
    ReflectionResult,
    SearchQuery,
    Trajectory,
    WorkflowRequest,
    WorkflowResponse,
)
from contracts.common import EngineName
from graphs.ace.curator.merge import MergeOutcome
from graphs.ace.generator.heuristic import GeneratedAnswer
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.search.hybrid import Hit

AceRequest = AceGenerateRequest | AceReflectRequest | AceCurateRequest | WorkflowRequest
AceOutcome = AnswerAction | ReflectionAction | CuratedAction | WorkflowResponse


class AceGraphState(TypedDict, total=False):
    """Input (`request`, `request_id`) and what each node adds."""

    request: AceRequest
    request_id: str
    dataset: str
    rules: SectionRules
    playbook: Playbook
    # generator
    query: SearchQuery
    hits: list[Hit]
    generated: GeneratedAnswer
    generated_by: EngineName
    # reflector
    trajectory: Trajectory
    ground_truth: str
    test_report: str
    max_iterations: int
    used: list[Bullet]
    skipped: list[str]
    iteration: int
    insights: list[Insight]
    evaluations: list[BulletEvaluation]
    converged: bool
    model_problem: ModelProblem | None
    reflected_by: EngineName
    reflection: ReflectionResult
    # curator
    client_deltas: list[DeltaContextItem]
    proposed: list[DeltaContextItem]
    curated_by: EngineName
    curate_notes: list[str]
    counters_changed: bool
    max_bullets: int | None
    dedup_threshold: float
    merged: MergeOutcome
    # workflow
    save: bool
    saved: bool
    # the response
    outcome: AceOutcome
