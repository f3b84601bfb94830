"""Keep node ids the input does not have out of a rejected report before it is returned.

A report that never passed the validator is still returned (seed 004 §6: the caller may run its
own correction loop on it), but the service never hands out an id that was not in its input
(DESIGN.md §4): proposals that point at an unknown node are dropped, unknown ids are removed
from `node_ids`, and an unknown Advisor target becomes the empty string. Whatever was removed is
returned so the caller can log it. Keys the report schema does not define (at the top level and
inside proposals) are dropped too, since nothing checked the ids they might carry; the rest of the
report is left as the model wrote it. Dropping and logging is the shared check every agent uses
(`graphs.llm.grounding.keep_known`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from contracts.proposal_quality import (
    AdvisorCriterion,
    AdvisorOption,
    AdvisorReport,
    OrganizerDecompositionProposal,
    OrganizerGroupingProposal,
    OrganizerRelationProposal,
    OrganizerReport,
    OrganizerReportChild,
    ReportKind,
)
from graphs.llm.grounding import keep_known


def _names(struct: type[msgspec.Struct]) -> frozenset[str]:
    return frozenset(f.encode_name for f in msgspec.structs.fields(struct))


_TOP_LEVEL = {"organizer": _names(OrganizerReport), "advisor": _names(AdvisorReport)}
_ITEM_FIELDS = {
    "organizer": {
        "decomposition_proposals": _names(OrganizerDecompositionProposal),
        "grouping_proposals": _names(OrganizerGroupingProposal),
        "relation_proposals": _names(OrganizerRelationProposal),
    },
    "advisor": {"options": _names(AdvisorOption), "criteria": _names(AdvisorCriterion)},
}
_CHILD_FIELDS = _names(OrganizerReportChild)


def _keep(item: object, fields: frozenset[str]) -> object:
    return {k: v for k, v in item.items() if k in fields} if isinstance(item, dict) else item


def _only_known(kind: ReportKind, report: dict[str, Any]) -> dict[str, Any]:
    known = {k: v for k, v in report.items() if k in _TOP_LEVEL[kind]}
    for key, fields in _ITEM_FIELDS[kind].items():
        if isinstance(known.get(key), list):
            known[key] = [_keep(item, fields) for item in known[key]]
    for item in known.get("decomposition_proposals", []) if kind == "organizer" else []:
        if isinstance(item, dict) and isinstance(item.get("suggested_children"), list):
            item["suggested_children"] = [_keep(c, _CHILD_FIELDS) for c in item["suggested_children"]]
    return known


_ORGANIZER_ID_FIELDS = {
    "decomposition_proposals": ("target_node_id",),
    "relation_proposals": ("from_node_id", "to_node_id"),
}
AGENT = "proposal_quality"


def ground_report(
    kind: ReportKind, report: object, valid_ids: frozenset[str]
) -> tuple[dict[str, Any] | None, list[str]]:
    """The report without ids outside `valid_ids` (logged, by the shared check), and the ids removed.

    None when the report is not an object.
    """
    if not isinstance(report, dict):
        return None, []
    grounded = _only_known(kind, report)
    dropped: list[str] = []

    def ids_of(fields: tuple[str, ...]) -> Callable[[object], list[str | None]]:
        def named(item: object) -> list[str | None]:
            found = [item.get(field) for field in fields] if isinstance(item, dict) else []
            ids: list[str | None] = [i if isinstance(i, str) else None for i in found]
            dropped.extend(i for i in ids if i is not None and i not in valid_ids)
            return ids

        return named

    if kind == "advisor":
        target = grounded.get("target_node_id")
        if isinstance(target, str) and target and not keep_known([target], valid_ids, agent=AGENT):
            dropped.append(target)
            grounded["target_node_id"] = ""
        return grounded, dropped
    for key, fields in _ORGANIZER_ID_FIELDS.items():
        items = grounded.get(key)
        if isinstance(items, list):
            grounded[key] = keep_known(items, valid_ids, agent=AGENT, ids_of=ids_of(fields))
    groupings = grounded.get("grouping_proposals")
    if isinstance(groupings, list):
        grounded["grouping_proposals"] = [_ground_group(g, valid_ids, dropped) for g in groupings]
    return grounded, dropped


def _ground_group(group: object, valid_ids: frozenset[str], dropped: list[str]) -> object:
    if not isinstance(group, dict) or not isinstance(group.get("node_ids"), list):
        return group
    node_ids = group["node_ids"]
    kept = keep_known(node_ids, valid_ids, agent=AGENT, ids_of=lambda i: [i if isinstance(i, str) else None])
    dropped += [i for i in node_ids if isinstance(i, str) and i not in valid_ids]
    return {**group, "node_ids": kept}
