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

from contracts.proposal_quality import ReportKind
from graphs.llm.grounding import keep_known
from graphs.proposal_quality.validator import FIELDS

_TOP_LEVEL = {"organizer": FIELDS["organizer"], "advisor": FIELDS["advisor"]}
_ITEM_FIELDS = {
    "organizer": {key: FIELDS[key] for key in ("decomposition_proposals", "grouping_proposals", "relation_proposals")},
    "advisor": {key: FIELDS[key] for key in ("options", "criteria")},
}
_CHILD_FIELDS = FIELDS["suggested_children"]


def _keep(item: object, fields: frozenset[str]) -> object:
    return {k: v for k, v in item.items() if k in fields} if isinstance(item, dict) else item


def _only_known(kind: ReportKind, report: dict[str, Any]) -> dict[str, Any]:
    known = {k: v for k, v in report.items() if k in _TOP_LEVEL[kind]}
    for key, fields in _ITEM_FIELDS[kind].items():
        if isinstance(known.get(key), list):
            known[key] = [_keep(item, fields) for item in known[key]]
    decompositions = known.get("decomposition_proposals") if kind == "organizer" else None
    for item in decompositions if isinstance(decompositions, list) else []:
        if isinstance(item, dict) and isinstance(item.get("suggested_children"), list):
            item["suggested_children"] = [_keep(c, _CHILD_FIELDS) for c in item["suggested_children"]]
    return known


_ORGANIZER_ID_FIELDS = {
    "decomposition_proposals": ("target_node_id",),
    "relation_proposals": ("from_node_id", "to_node_id"),
}
_ORGANIZER_LISTS = ("decomposition_proposals", "grouping_proposals", "relation_proposals")
AGENT = "proposal_quality"


def ground_report(
    kind: ReportKind, report: object, valid_ids: frozenset[str]
) -> tuple[dict[str, Any] | None, list[str]]:
    """The report without ids outside `valid_ids` (logged, by the shared check), and what was removed.

    Where the schema has an id (an id field, an entry of `node_ids`) only a string on the dashboard is
    kept: a list, an object or a number there (`["n9"]`, `{"id": "n9"}`) is no id but may carry one, so
    it goes like an unknown id. So does what stands where the schema has a list (of proposals, of ids)
    but is no list, and a proposal that is no object. Removed values that are not strings are listed as
    their JSON text. None when the report is not an object.
    """
    if not isinstance(report, dict):
        return None, []
    grounded = _only_known(kind, report)
    dropped: list[str] = []
    if kind == "advisor":
        target = grounded.get("target_node_id")
        if isinstance(target, str) and target and not keep_known([target], valid_ids, agent=AGENT):
            dropped.append(target)
            grounded["target_node_id"] = ""
        elif target is not None and not isinstance(target, str):
            dropped.append(_as_text(target))
            grounded["target_node_id"] = ""
        return grounded, dropped
    for key in _ORGANIZER_LISTS:
        if key in grounded:
            grounded[key] = _objects(grounded[key], dropped)
    for key, fields in _ORGANIZER_ID_FIELDS.items():
        if key in grounded:
            well_formed = _string_ids_only(grounded[key], fields, dropped)
            grounded[key] = keep_known(
                well_formed, valid_ids, agent=AGENT, ids_of=_recording(fields, valid_ids, dropped)
            )
    if "grouping_proposals" in grounded:
        grounded["grouping_proposals"] = [_ground_group(g, valid_ids, dropped) for g in grounded["grouping_proposals"]]
    return grounded, dropped


def _as_text(value: object) -> str:
    """A removed value as the caller's log shows it: a string as itself, anything else as its JSON text."""
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _objects(items: object, dropped: list[str]) -> list[dict[str, Any]]:
    """The proposals that are objects; anything else in their place (a bare id, a list) is removed."""
    if not isinstance(items, list):
        dropped.append(_as_text(items))
        return []
    dropped.extend(_as_text(item) for item in items if not isinstance(item, dict))
    return [item for item in items if isinstance(item, dict)]


def _string_ids_only(items: list[dict[str, Any]], fields: tuple[str, ...], dropped: list[str]) -> list[dict[str, Any]]:
    """The proposals whose id `fields` hold a string or nothing; one holding anything else is removed."""
    kept = []
    for item in items:
        malformed = [item[f] for f in fields if item.get(f) is not None and not isinstance(item[f], str)]
        dropped.extend(_as_text(value) for value in malformed)
        if not malformed:
            kept.append(item)
    return kept


def _recording(
    fields: tuple[str, ...], valid_ids: frozenset[str], dropped: list[str]
) -> Callable[[dict[str, Any]], list[str | None]]:
    """`keep_known`'s reading of a proposal's ids, which also lists those not on the dashboard in `dropped`."""

    def named(item: dict[str, Any]) -> list[str | None]:
        ids: list[str | None] = [item.get(field) for field in fields]
        dropped.extend(i for i in ids if i is not None and i not in valid_ids)
        return ids

    return named


def _ground_group(group: dict[str, Any], valid_ids: frozenset[str], dropped: list[str]) -> dict[str, Any]:
    """The grouping with only dashboard ids in `node_ids` (`[]` when what stood there was no list)."""
    node_ids = group.get("node_ids")
    if node_ids is None:
        return group
    if not isinstance(node_ids, list):
        dropped.append(_as_text(node_ids))
        return {**group, "node_ids": []}
    strings = [i for i in node_ids if isinstance(i, str)]
    dropped.extend(_as_text(i) for i in node_ids if not isinstance(i, str))
    kept = keep_known(strings, valid_ids, agent=AGENT)
    dropped.extend(i for i in strings if i not in valid_ids)
    return {**group, "node_ids": kept}
