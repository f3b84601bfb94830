"""Rules on a playbook that msgspec cannot check alone: unique ids and sections the dataset allows.

Counters, sizes and id syntax are contract constraints (a 422 from msgspec); these need the whole
playbook or the configuration and end in a 400 INVALID_INPUT that lists every problem with its path.
"""

from __future__ import annotations

from contracts.ace import AceCurateRequest, Playbook
from contracts.common import ErrorDetail
from graphs.ace.sections import SectionRules
from graphs.errors import InvalidInput

MAX_DETAILS = 20
"""Problems listed in one error body; the message says how many there were in all."""


def playbook_problems(playbook: Playbook, rules: SectionRules, path: str = "$.playbook") -> list[ErrorDetail]:
    """Duplicate ids and unknown sections, each with the JSON path of the offending bullet."""
    problems: list[ErrorDetail] = []
    first_seen: dict[str, int] = {}
    for index, bullet in enumerate(playbook.bullets):
        where = f"{path}.bullets[{index}]"
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


def raise_if_problems(problems: list[ErrorDetail], what: str) -> None:
    """Raise `InvalidInput` naming the first problems, when there are any."""
    if problems:
        shown = problems[:MAX_DETAILS]
        more = f" (and {len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
        summary = "; ".join(f"{d.path}: {d.message}" for d in shown[:3])
        raise InvalidInput(f"{what}: {len(problems)} problem(s){more}: {summary}", shown)


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
