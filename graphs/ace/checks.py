"""Every check ACE makes on caller input, in one place: what msgspec cannot check alone.

Counters, sizes and id syntax are contract constraints (a 422 from msgspec); these need the whole
playbook, the request's other fields or the configuration, and end in a 400 INVALID_INPUT that lists
every problem with its path: unique bullet ids and sections the dataset allows (requests, stored
playbooks and imported text alike), section filters, evaluations and deltas naming bullets that exist,
and a save into a playbook an operator stored. Each operation's one pre-graph check (`check_search` ...
`check_workflow`, wired in `run.py`) is at the end; the graphs' nodes trust what passed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from contracts.ace import (
    AceCurateRequest,
    AceGenerateRequest,
    AceReflectRequest,
    AceSearchRequest,
    DeltaContextItem,
    Playbook,
    PlaybookExportRequest,
    PlaybookImportRequest,
    WorkflowRequest,
)
from contracts.common import ErrorDetail
from graphs import request_limits
from graphs.ace.playbook.sections import (
    SectionRules,
    configured_spelling,
    curate_dataset,
    reflect_dataset,
    section_rules,
)
from graphs.ace.playbook.store import PlaybookStore
from graphs.config_files import SectionDefinition
from graphs.context import AgentContext
from graphs.errors import InvalidInput, raise_if_problems
from graphs.text.blank import blank_problems, is_blank


def playbook_problems(playbook: Playbook, rules: SectionRules, path: str = "$.playbook") -> list[ErrorDetail]:
    """Duplicate ids, unknown sections and blank content, each with the JSON path of the offending bullet.

    A bullet of only whitespace or invisible characters says nothing, yet would be searched, shown to a model
    and voted on; an ADD or UPDATE with such content is refused, so a playbook holding one is too.
    """
    problems: list[ErrorDetail] = []
    first_seen: dict[str, int] = {}
    for index, bullet in enumerate(playbook.bullets):
        where = f"{path}.bullets[{index}]"
        if is_blank(bullet.content):
            problems.append(
                ErrorDetail(path=f"{where}.content", message=f"bullet {bullet.id!r} has no visible content")
            )
        if bullet.id in first_seen:
            problems.append(
                ErrorDetail(
                    path=f"{where}.id", message=f"duplicate id {bullet.id!r} (first at index {first_seen[bullet.id]})"
                )
            )
        else:
            first_seen[bullet.id] = index
        if not rules.allows(bullet.section):
            problems.append(ErrorDetail(path=f"{where}.section", message=_unknown_section(bullet.section, rules)))
    return problems


def _unknown_section(section: str, rules: SectionRules) -> str:
    return f"unknown section {section!r} for dataset {rules.dataset!r}; allowed: {', '.join(rules.names)}"


def check_playbook(playbook: Playbook, rules: SectionRules, path: str = "$.playbook") -> None:
    """Raise `InvalidInput` when the playbook has duplicate ids or sections its dataset does not allow."""
    raise_if_problems(playbook_problems(playbook, rules, path), "invalid playbook")


def check_sections(sections: list[str] | None, rules: SectionRules, path: str) -> None:
    """Raise `InvalidInput` when a section filter names a section the dataset does not have."""
    problems = [
        ErrorDetail(path=f"{path}[{i}]", message=_unknown_section(name, rules))
        for i, name in enumerate(sections or [])
        if not rules.allows(name)
    ]
    raise_if_problems(problems, "invalid section filter")


def evaluation_problems(request: AceCurateRequest) -> list[ErrorDetail]:
    """Evaluations must name bullets of the playbook (and, given the trajectory, ones it used), once each."""
    existing = {b.id for b in request.playbook.bullets}
    used = set(request.trajectory.used_bullet_ids) if request.trajectory else None
    problems: list[ErrorDetail] = []
    seen: set[str] = set()
    for i, evaluation in enumerate(request.reflection.bullet_evaluations):
        path = f"$.reflection.bullet_evaluations[{i}].bullet_id"
        if evaluation.bullet_id not in existing:
            problems.append(ErrorDetail(path=path, message=f"no bullet {evaluation.bullet_id!r} in the playbook"))
        elif used is not None and evaluation.bullet_id not in used:
            problems.append(ErrorDetail(path=path, message=f"bullet {evaluation.bullet_id!r} was not used"))
        elif evaluation.bullet_id in seen:
            problems.append(ErrorDetail(path=path, message=f"bullet {evaluation.bullet_id!r} is evaluated twice"))
        seen.add(evaluation.bullet_id)
    return problems


def delta_problems(
    deltas: list[DeltaContextItem], playbook: Playbook, rules: SectionRules, path: str = "$.deltas"
) -> list[ErrorDetail]:
    """Why a caller's deltas cannot be applied to `playbook`, with JSON paths (empty when they can)."""
    problems: list[ErrorDetail] = []
    existing = {b.id: (b.section, b.content) for b in playbook.bullets}  # as the deltas before have left them
    deleted: set[str] = set()
    for i, delta in enumerate(deltas):
        where = f"{path}[{i}]"
        if delta.type == "ADD":
            problems += _add_problems(delta, rules, where)
            continue
        if delta.bullet_id is None:
            problems.append(ErrorDetail(path=f"{where}.bullet_id", message=f"{delta.type} needs a bullet_id"))
        elif delta.bullet_id not in existing:
            problems.append(
                ErrorDetail(path=f"{where}.bullet_id", message=f"no bullet {delta.bullet_id!r} in the playbook")
            )
        elif delta.bullet_id in deleted:
            problems.append(
                ErrorDetail(path=f"{where}.bullet_id", message=f"bullet {delta.bullet_id!r} is deleted earlier")
            )
        else:
            problems += _target_problems(delta, *existing[delta.bullet_id], where)
            if delta.type == "UPDATE":
                existing[delta.bullet_id] = (existing[delta.bullet_id][0], delta.content)
            else:
                deleted.add(delta.bullet_id)
        if delta.type == "UPDATE" and not delta.content.strip():
            problems.append(ErrorDetail(path=f"{where}.content", message="UPDATE needs content"))
    return problems


def _add_problems(delta: DeltaContextItem, rules: SectionRules, where: str) -> list[ErrorDetail]:
    problems: list[ErrorDetail] = []
    if not rules.allows(delta.section):
        problems.append(
            ErrorDetail(path=f"{where}.section", message=f"unknown section {delta.section!r} for {rules.dataset!r}")
        )
    if not delta.content.strip():
        problems.append(ErrorDetail(path=f"{where}.content", message="ADD needs content"))
    return problems


def _target_problems(delta: DeltaContextItem, section: str, content: str, where: str) -> list[ErrorDetail]:
    """An UPDATE or DELETE must say what it acts on as the playbook has it, or it is refused, never rewritten.

    Its `section` is the bullet's (a bullet does not move between sections); a DELETE's `content`, when
    given, is the bullet's current content (a confirmation: a DELETE meant for other content is stale).
    """
    problems: list[ErrorDetail] = []
    if delta.section != section:
        message = f"bullet {delta.bullet_id!r} is in section {section!r}, not {delta.section!r}"
        problems.append(ErrorDetail(path=f"{where}.section", message=message))
    if delta.type == "DELETE" and delta.content.strip() and delta.content.strip() != content.strip():
        message = (
            f"DELETE content does not match bullet {delta.bullet_id!r}'s content "
            "(leave it empty, or send the bullet's content)"
        )
        problems.append(ErrorDetail(path=f"{where}.content", message=message))
    return problems


# --- each operation's one pre-graph check (see run.py) ---------------------------------------------


def check_search(request: AceSearchRequest, prior: None, context: AgentContext) -> None:
    """A query with visible text; the playbook's size; its ids and sections, and the section filter, fit the dataset."""
    raise_if_problems(
        blank_problems([("$.query.query_text", request.query.query_text)]), "blank query", status_code=422
    )
    check_dataset_spelling([("$.dataset", request.dataset)], context.sections)
    request_limits.check_playbook(request.playbook)
    rules = section_rules(context.sections, request.dataset)
    check_playbook(request.playbook, rules)
    check_sections(request.query.section_filter, rules, "$.query.section_filter")


def check_generate(request: AceGenerateRequest, prior: None, context: AgentContext) -> None:
    """A query with visible text; the playbook's size; its ids and sections, and the section filter, fit the dataset."""
    raise_if_problems(blank_problems([("$.query", request.query)]), "blank query", status_code=422)
    check_dataset_spelling([("$.dataset", request.dataset)], context.sections)
    request_limits.check_playbook(request.playbook)
    rules = section_rules(context.sections, request.dataset)
    check_playbook(request.playbook, rules)
    check_sections(request.section_filter, rules, "$.section_filter")


def check_dataset_spelling(
    named: list[tuple[str, str | None]],
    sections: dict[str, list[SectionDefinition]],
    stored: Callable[[str], bool] | None = None,
) -> None:
    """422 at each dataset name (path, value; None when not given) that only differs in case from a configured one.

    `stored`, when given, exempts a name a playbook is stored under: it is asked only of such a name, so the
    common request reads no directory.
    """
    problems = []
    for path, value in named:
        known = configured_spelling(sections, value) if value is not None else None
        if known is not None and not (stored is not None and value is not None and stored(value)):
            message = (
                f"no dataset {value!r}: dataset names are case-sensitive, and {known!r} is the configured one "
                "(another name gets the permissive default rules and a playbook of its own)"
            )
            problems.append(ErrorDetail(path=path, message=message))
    raise_if_problems(problems, "a dataset name differs from a configured one only in case", status_code=422)


def check_one_dataset(named: list[tuple[str, str | None]]) -> None:
    """Every dataset a request names (path, value; None when not given) is the same one, else 400 at each.

    Which one's rules apply would otherwise depend on an order of precedence the caller never sees. A
    trajectory's `dataset` is `default` when omitted, so a trajectory sent without it names `default`.
    """
    given = [(path, value) for path, value in named if value is not None]
    if len({value for _, value in given}) <= 1:
        return
    listing = ", ".join(f"{path} {value!r}" for path, value in given)
    message = f"the request names more than one dataset ({listing}); send the same one everywhere"
    details = [ErrorDetail(path=path, message=f"{value!r}, while {listing}") for path, value in given]
    raise InvalidInput(message, details)


def check_reflect(request: AceReflectRequest, prior: None, context: AgentContext) -> None:
    """The sizes; one dataset (`check_one_dataset`); the playbook fits it."""
    request_limits.check_playbook(request.playbook)
    request_limits.check_trajectory(request.trajectory)
    named = [("$.dataset", request.dataset), ("$.trajectory.dataset", request.trajectory.dataset)]
    check_dataset_spelling(named, context.sections)
    check_one_dataset(named)
    check_playbook(request.playbook, section_rules(context.sections, reflect_dataset(request)))


def check_curate(request: AceCurateRequest, prior: None, context: AgentContext) -> None:
    """The sizes and one dataset; then the playbook, every evaluation's bullet and the deltas, all problems at once."""
    request_limits.check_playbook(request.playbook)
    request_limits.check_trajectory(request.trajectory)
    request_limits.check_changes(len(request.deltas), request.reflection)
    named = [
        ("$.dataset", request.dataset),
        ("$.trajectory.dataset", request.trajectory.dataset if request.trajectory is not None else None),
        ("$.reflection.trajectory_dataset", request.reflection.trajectory_dataset),
    ]
    check_dataset_spelling(named, context.sections)
    check_one_dataset(named)
    rules = section_rules(context.sections, curate_dataset(request))
    problems = playbook_problems(request.playbook, rules)
    problems += _query_mismatch(request)
    problems += evaluation_problems(request)
    problems += delta_problems(request.deltas, request.playbook, rules)
    raise_if_problems(problems, "invalid curate request")


def _query_mismatch(request: AceCurateRequest) -> list[ErrorDetail]:
    """A reflection on another query than the trajectory's: which one the lessons are about would be a guess."""
    trajectory, reflection = request.trajectory, request.reflection
    if trajectory is None or reflection.trajectory_query == trajectory.query:
        return []
    message = (
        f"the reflection is on query {reflection.trajectory_query[:80]!r}, the trajectory on "
        f"{trajectory.query[:80]!r}: send the reflection of this trajectory"
    )
    return [ErrorDetail(path="$.reflection.trajectory_query", message=message)]


def check_workflow(request: WorkflowRequest, prior: None, context: AgentContext) -> None:
    """Visible text where text is given; a save has something to save, in a playbook an operator stored.

    Without a ground truth or a test report nothing is reflected on, so a save would silently save nothing;
    requests update playbooks, never create files.
    """
    check_dataset_spelling([("$.dataset", request.dataset)], context.sections, partial(_stored, context))
    problems = blank_problems(
        [("$.query", request.query), ("$.ground_truth", request.ground_truth), ("$.test_report", request.test_report)]
    )
    if request.save and request.ground_truth is None and request.test_report is None:
        message = "save needs ground_truth or test_report: without either nothing is reflected on, so nothing to save"
        problems.append(ErrorDetail(path="$.save", message=message))
    raise_if_problems(problems, "invalid workflow request", status_code=422)
    store = PlaybookStore(context.ace.playbook_data_dir)
    if request.save and not store.path_for(request.dataset).is_file():
        message = f"dataset {request.dataset!r} has no stored playbook to save into; import one first"
        raise InvalidInput(message, [ErrorDetail(path="$.save", message=message)])


def check_stored_dataset(
    request: PlaybookImportRequest | PlaybookExportRequest, prior: None, context: AgentContext
) -> None:
    """`PUT` / `GET /playbooks/{dataset}`: a dataset named as configured (`check_dataset_spelling`), or stored."""
    check_dataset_spelling([("$.dataset", request.dataset)], context.sections, partial(_stored, context))


def _stored(context: AgentContext, dataset: str) -> bool:
    """Whether a playbook is stored under exactly this name: then the name is the caller's, however it is spelled.

    Playbooks stored before names were checked (`AppWorld` beside `appworld`) stay readable, replaceable and
    usable; only a name that would create one, or read an empty one, is refused.
    """
    try:  # the directory's own names: on a case-insensitive file system `appworld.json` would answer for APPWORLD
        return dataset in PlaybookStore(context.ace.playbook_data_dir).datasets()
    except OSError:  # an unreadable store is the operation's to report, not a reason to skip the check
        return False
