"""The types whose JSON Schemas are exported to `contracts/schema/` (one file per type).

Each agent's contracts module adds its request/response/state types here, so the Go side
can generate its types and a test catches drift between code and committed schemas.
"""

from __future__ import annotations

from typing import Any

from contracts.ace import (
    AceCurateRequest,
    AceCurateResponse,
    AceGenerateRequest,
    AceGenerateResponse,
    AceReflectRequest,
    AceReflectResponse,
    AceSearchRequest,
    AceSearchResponse,
    Playbook,
    PlaybookImportResponse,
    PlaybookListResponse,
    WorkflowRequest,
    WorkflowRunResponse,
)
from contracts.common import ErrorResponse, HealthResponse, ReadyResponse, Usage
from contracts.grace import GraceRequest, GraceResponse, GraceState
from contracts.librarian import LibrarianRequest, LibrarianResponse, LibrarianState
from contracts.proposal_quality import (
    AdvisorReport,
    OrganizerReport,
    ProposalRunRequest,
    ProposalRunResponse,
    ProposalValidateRequest,
    ProposalValidateResponse,
    ValidationResult,
)

EXPORTED: dict[str, Any] = {
    "AceSearchRequest": AceSearchRequest,
    "AceSearchResponse": AceSearchResponse,
    "AceGenerateRequest": AceGenerateRequest,
    "AceGenerateResponse": AceGenerateResponse,
    "AceReflectRequest": AceReflectRequest,
    "AceReflectResponse": AceReflectResponse,
    "AceCurateRequest": AceCurateRequest,
    "AceCurateResponse": AceCurateResponse,
    "Playbook": Playbook,
    "PlaybookImportResponse": PlaybookImportResponse,
    "PlaybookListResponse": PlaybookListResponse,
    "GraceRequest": GraceRequest,
    "GraceResponse": GraceResponse,
    "GraceState": GraceState,
    "WorkflowRequest": WorkflowRequest,
    "WorkflowRunResponse": WorkflowRunResponse,
    "ErrorResponse": ErrorResponse,
    "HealthResponse": HealthResponse,
    "LibrarianRequest": LibrarianRequest,
    "LibrarianResponse": LibrarianResponse,
    "LibrarianState": LibrarianState,
    "ReadyResponse": ReadyResponse,
    "AdvisorReport": AdvisorReport,
    "OrganizerReport": OrganizerReport,
    "ProposalRunRequest": ProposalRunRequest,
    "ProposalRunResponse": ProposalRunResponse,
    "ProposalValidateRequest": ProposalValidateRequest,
    "ProposalValidateResponse": ProposalValidateResponse,
    "ValidationResult": ValidationResult,
    "Usage": Usage,
}
