"""The proposal-quality gate (seed 004 §3): Must rules become `errors`, Should rules become `warnings`.

The validator only judges; it never calls a model or loops (seed 004 §4.3). It takes the report as
raw parsed JSON, not as a typed Struct, because its main input is whatever a model produced: a
missing key, a wrong type or a report that is not an object at all must come back as errors the
self-correction prompt can quote, never as an exception. Every message names the exact JSON path
(`decomposition_proposals[0].suggested_children must have at least 2 items`), in the seed's wording.

Optional fields (`?` in the seed) may be absent or null. Invariant (held by the tests): when the
result is `ok`, `msgspec.convert(without_null_optionals(kind, report), OrganizerReport)` (or
`AdvisorReport`) succeeds, so a report that passed can be rendered as its type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
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
    ValidationResult,
)
from graphs.proposal_quality.forbidden_phrases import comparable, forbidden_in, forbidden_in_any

ORGANIZER_FORBIDDEN = ("べき", "してください", "が必要です")
"""Organizer: assertive phrases not allowed in `summary` or any `reason` (seed 004 §3.1), in any spelling
(`forbidden_phrases.forbidden_in`: spacing, width, kana and kanji variants); messages quote them as written here."""
ADVISOR_FORBIDDEN = ("ベスト", "推奨", "正解", "すべき")
"""Advisor: recommending or asserting words not allowed anywhere in the output (seed 004 §3.3), in any spelling."""
LABEL_MARKERS = ("案", "パターン", "候補")
"""An Advisor option label should say it is one option among others (seed 004 §3.4)."""
NEXT_STEP_MARKER = "まず"
"""An Organizer summary should point at the next step (seed 004 §3.2)."""

MAX_MESSAGES = 100
"""Errors (and warnings) reported at most; a hostile report cannot make the answer or a re-ask prompt huge."""
MAX_QUOTED_CHARS = 80
"""An offending id is quoted in a message up to this many characters."""


def _field_names(struct: type[msgspec.Struct]) -> frozenset[str]:
    return frozenset(f.encode_name for f in msgspec.structs.fields(struct))


FIELDS: dict[str, frozenset[str]] = {
    "organizer": _field_names(OrganizerReport),
    "advisor": _field_names(AdvisorReport),
    "decomposition_proposals": _field_names(OrganizerDecompositionProposal),
    "grouping_proposals": _field_names(OrganizerGroupingProposal),
    "relation_proposals": _field_names(OrganizerRelationProposal),
    "suggested_children": _field_names(OrganizerReportChild),
    "options": _field_names(AdvisorOption),
    "criteria": _field_names(AdvisorCriterion),
}
"""The keys each object of a report has (the report types of `contracts.proposal_quality`), by the report's kind or
the list the object is an item of: any other key is an error, since nothing reads it (a misspelled `critera`)."""

_FORBIDDEN_PHRASE_NOTE = "(e.g. べき, してください)"
_FORBIDDEN_WORD_NOTE = "(e.g. ベスト, 推奨)"


class _Findings:
    """Errors and warnings in document order."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def result(self) -> ValidationResult:
        return ValidationResult(ok=not self.errors, errors=_capped(self.errors), warnings=_capped(self.warnings))


def _capped(messages: list[str]) -> list[str]:
    if len(messages) <= MAX_MESSAGES:
        return messages
    return [*messages[: MAX_MESSAGES - 1], f"... and {len(messages) - MAX_MESSAGES + 1} more"]


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def quote(value: str) -> str:
    """The value as it may appear inside a message: printable, bounded, in single quotes."""
    shown = "".join(ch if ch.isprintable() else "?" for ch in value[:MAX_QUOTED_CHARS])
    return f"'{shown}…'" if len(value) > MAX_QUOTED_CHARS else f"'{shown}'"


def _has(text: str, *markers: str) -> bool:
    """Whether `text` contains one of `markers`, compared as forbidden phrases are (width, spacing and kana folded)."""
    seen = comparable(text)
    return any(_comparable_marker(marker) in seen for marker in markers)


_comparable_marker = lru_cache(maxsize=16)(comparable)
"""`comparable` of the rules' few fixed markers, worked out once."""


# --- field helpers: each reports its own problem and returns the value only when it is usable ------


def _object(value: object, path: str, found: _Findings) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    found.errors.append(f"{path} must be an object")
    return None


def _known_keys(obj: dict[str, Any], fields: frozenset[str], parent: str, found: _Findings) -> None:
    """An error for each key of `obj` that is not one of `fields`: nothing would read its value."""
    if fields.issuperset(obj):
        return
    expected = ", ".join(sorted(fields))
    for key in obj:
        if key not in fields:
            shown = key if key.isprintable() and len(key) <= MAX_QUOTED_CHARS else quote(key)
            found.errors.append(f"{_path(parent, shown)} is not a field here, so nothing reads it ({expected})")


def _string(obj: dict[str, Any], key: str, parent: str, found: _Findings, *, non_blank: bool = False) -> str | None:
    """A required string field; `non_blank` also rejects "" and whitespace (reported as "is required")."""
    path = _path(parent, key)
    value = obj.get(key)
    if key not in obj:
        found.errors.append(f"{path} is required")
        return None
    if not isinstance(value, str):
        found.errors.append(f"{path} must be a string")
        return None
    if non_blank and not value.strip():
        found.errors.append(f"{path} is required")
        return None
    return value


def _optional_string(obj: dict[str, Any], key: str, parent: str, found: _Findings) -> None:
    """An optional string; null counts as absent (models write it for fields they leave out)."""
    if obj.get(key) is not None and not isinstance(obj[key], str):
        found.errors.append(f"{_path(parent, key)} must be a string")


def _array(obj: dict[str, Any], key: str, parent: str, found: _Findings, *, required: bool = True) -> list[Any] | None:
    """A list field; an optional one may be absent or null."""
    path = _path(parent, key)
    if key not in obj or (obj[key] is None and not required):
        if required:
            found.errors.append(f"{path} is required")
        return None
    value = obj[key]
    if not isinstance(value, list):
        found.errors.append(f"{path} must be an array")
        return None
    return value


def _string_items(items: list[Any], path: str, found: _Findings, *, non_blank: bool) -> list[str]:
    strings = []
    for index, item in enumerate(items):
        if not isinstance(item, str) or (non_blank and not item.strip()):
            found.errors.append(f"{_path(path, index)} must be a {'non-empty ' if non_blank else ''}string")
        else:
            strings.append(item)
    return strings


def _objects(
    items: list[Any], path: str, found: _Findings, fields: frozenset[str]
) -> Iterable[tuple[str, dict[str, Any]]]:
    """The items that are objects, with their paths; an item that is not, or a key not in `fields`, is an error."""
    for index, item in enumerate(items):
        item_path = _path(path, index)
        obj = _object(item, item_path, found)
        if obj is not None:
            _known_keys(obj, fields, item_path, found)
            yield item_path, obj


def _known_id(
    obj: dict[str, Any], key: str, parent: str, valid: frozenset[str], found: _Findings
) -> None:  # Organizer ids: the seed's message quotes the unknown id
    value = _string(obj, key, parent, found)
    if value is not None and value not in valid:
        found.errors.append(f"{_path(parent, key)} {quote(value)} is not in valid node list")


def _reason(obj: dict[str, Any], parent: str, found: _Findings) -> None:
    path = _path(parent, "reason")
    value = obj.get("reason")
    if not isinstance(value, str) or not value.strip():
        found.errors.append(f"{path} is required and non-empty")
        return
    _no_forbidden_phrase(value, path, found)


def _no_forbidden_phrase(text: str, path: str, found: _Findings) -> None:
    phrase = forbidden_in(text, ORGANIZER_FORBIDDEN)
    if phrase is not None:
        found.errors.append(f"{path} contains forbidden phrase {quote(phrase)} {_FORBIDDEN_PHRASE_NOTE}")


def _short_label(value: object, path: str, found: _Findings) -> None:
    if isinstance(value, str) and len(value.strip()) < 2:
        found.warnings.append(f"{path} should be at least 2 characters")


# --- Organizer (seed 004 §3.1, §3.2) --------------------------------------------------------------


Rules = Callable[[dict[str, Any], frozenset[str], _Findings], None]


def _judged(
    report: object,
    valid_node_ids: Iterable[str],
    rules: Rules,
    errors: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> ValidationResult:
    """One report through its kind's rules: anything but an object is one error, and no rule runs on it.

    `errors` and `warnings` were found beside the rules; they are counted and capped with the rules' own, the
    warnings first (a report that mixes nodes up matters more than a label's wording).
    """
    found = _Findings()
    found.warnings.extend(warnings)
    obj = _object(report, "report", found)
    if obj is not None:
        rules(obj, frozenset(valid_node_ids), found)
    found.errors.extend(errors)
    return found.result()


def validate_organizer_report(report: object, valid_node_ids: Iterable[str]) -> ValidationResult:
    """Check an Organizer report (raw parsed JSON) against the Must and Should rules of seed 004 §3.1–3.2.

    Args:
        report: The parsed JSON, of any shape; anything but an object is one error.
        valid_node_ids: The node ids of the input (dashboard); every id the report names must be one of them.

    Returns:
        `ok` exactly when no Must rule is broken; `warnings` lists the Should rules that are not met.
    """
    return _judged(report, valid_node_ids, _organizer_rules)


def _organizer_rules(obj: dict[str, Any], valid: frozenset[str], found: _Findings) -> None:
    _known_keys(obj, FIELDS["organizer"], "", found)
    decompositions = _array(obj, "decomposition_proposals", "", found)
    groupings = _array(obj, "grouping_proposals", "", found)
    relations = _array(obj, "relation_proposals", "", found)
    _check_summary(obj, found)
    for path, item in _objects(
        decompositions or [], "decomposition_proposals", found, FIELDS["decomposition_proposals"]
    ):
        _check_decomposition(item, path, valid, found)
    for path, item in _objects(groupings or [], "grouping_proposals", found, FIELDS["grouping_proposals"]):
        _check_grouping(item, path, valid, found)
    for path, item in _objects(relations or [], "relation_proposals", found, FIELDS["relation_proposals"]):
        _check_relation(item, path, valid, found)


def _check_summary(obj: dict[str, Any], found: _Findings) -> None:
    summary = obj.get("summary")
    if "summary" not in obj:
        found.errors.append("summary is required")
    elif not isinstance(summary, str):
        found.errors.append("summary must be a string")
    elif not summary.strip():
        found.errors.append("summary must be non-empty")
    else:
        _no_forbidden_phrase(summary, "summary", found)
        if not _has(summary, NEXT_STEP_MARKER):
            found.warnings.append("summary could suggest next step (e.g. まず◯◯)")


def _check_grouping(item: dict[str, Any], path: str, valid: frozenset[str], found: _Findings) -> None:
    _string(item, "group_label", path, found)
    _short_label(item.get("group_label"), _path(path, "group_label"), found)
    _reason(item, path, found)
    node_ids = _array(item, "node_ids", path, found)
    if node_ids == []:
        found.errors.append(f"{_path(path, 'node_ids')} must have at least 1 item (a group of no node groups nothing)")
    if not node_ids or _all_known(node_ids, valid):
        return
    ids_path = _path(path, "node_ids")
    for index, node_id in enumerate(node_ids):
        if not isinstance(node_id, str):
            found.errors.append(f"{_path(ids_path, index)} must be a string")
        elif node_id not in valid:
            found.errors.append(f"{_path(ids_path, index)} {quote(node_id)} is not in valid node list")


def _all_known(items: list[Any], valid: frozenset[str]) -> bool:
    """Whether every item is a valid id (then each is a string too): one set test in C instead of a loop per id.

    A group may list every node of the board; usually all of them are valid, and only then is the loop
    that words each problem skipped. An unhashable item (a list or object a model wrote) is not an id.
    """
    try:
        return valid.issuperset(items)
    except TypeError:
        return False


def _check_relation(item: dict[str, Any], path: str, valid: frozenset[str], found: _Findings) -> None:
    _known_id(item, "from_node_id", path, valid, found)
    _known_id(item, "to_node_id", path, valid, found)
    source = item.get("from_node_id")
    if isinstance(source, str) and source == item.get("to_node_id"):
        found.errors.append(
            f"{_path(path, 'to_node_id')} {quote(source)} is the from_node_id: a node is not related to itself"
        )
    _string(item, "relation_type", path, found)
    _short_label(item.get("relation_type"), _path(path, "relation_type"), found)
    _reason(item, path, found)


def _check_decomposition(item: dict[str, Any], path: str, valid: frozenset[str], found: _Findings) -> None:
    _known_id(item, "target_node_id", path, valid, found)
    _string(item, "target_title", path, found)
    _reason(item, path, found)
    children = _array(item, "suggested_children", path, found)
    if children is None:
        return
    children_path = _path(path, "suggested_children")
    if len(children) < 2:
        found.errors.append(f"{children_path} must have at least 2 items")
    for child_path, child in _objects(children, children_path, found, FIELDS["suggested_children"]):
        _string(child, "title", child_path, found, non_blank=True)
        _string(child, "context", child_path, found, non_blank=True)
        _optional_string(child, "suggested_status", child_path, found)


# --- Advisor (seed 004 §3.3, §3.4) ----------------------------------------------------------------


def validate_advisor_report(report: object, valid_node_ids: Iterable[str]) -> ValidationResult:
    """Check an Advisor report (raw parsed JSON) against the Must and Should rules of seed 004 §3.3–3.4.

    With no nodes at all (sample A4) there is nothing to point at: `target_node_id` must then be the
    empty string, which is the seed's allowed exception; otherwise it must be one of `valid_node_ids`.

    Args:
        report: The parsed JSON, of any shape; anything but an object is one error.
        valid_node_ids: The node ids of the input (dashboard).

    Returns:
        `ok` exactly when no Must rule is broken; `warnings` lists the Should rules that are not met.
    """
    return _judged(report, valid_node_ids, _advisor_rules)


def _advisor_rules(obj: dict[str, Any], valid: frozenset[str], found: _Findings) -> None:
    _known_keys(obj, FIELDS["advisor"], "", found)
    target = _string(obj, "target_node_id", "", found)
    if target is not None and (target not in valid if valid else target != ""):
        found.errors.append("target_node_id is not in valid node list")
    _string(obj, "target_title", "", found)
    _string(obj, "current_status", "", found)
    options = _array(obj, "options", "", found)
    if options is not None and len(options) < 2:
        found.errors.append("options must have at least 2 items")
    for path, option in _objects(options or [], "options", found, FIELDS["options"]):
        _check_option(option, path, found)
    criteria = _array(obj, "criteria", "", found, required=False)
    for path, criterion in _objects(criteria or [], "criteria", found, FIELDS["criteria"]):
        _string(criterion, "name", path, found)
        _string(criterion, "description", path, found)
    if criteria is None or len(criteria) < 2:
        found.warnings.append("criteria should have at least 2 items")
    for key in ("next_decision", "summary"):
        value = _string(obj, key, "", found)
        if value is not None and not value.strip():
            found.errors.append(f"{key} must be non-empty")
    # The target id is the input's identifier, not wording the Advisor chose: a valid one is not scanned.
    scanned = {k: v for k, v in obj.items() if not (k == "target_node_id" and isinstance(v, str) and v in valid)}
    for path, word in _forbidden_words(scanned):
        found.errors.append(f"{path} contains forbidden word {quote(word)} {_FORBIDDEN_WORD_NOTE}")


def _check_option(option: dict[str, Any], path: str, found: _Findings) -> None:
    label = _string(option, "label", path, found, non_blank=True)
    if label is not None and not _has(label, *LABEL_MARKERS):
        found.warnings.append(f"{_path(path, 'label')} should contain 案/パターン/候補")
    _optional_string(option, "description", path, found)
    _optional_string(option, "suggested_status", path, found)
    for key in ("pros", "cons"):
        items = _array(option, key, path, found, required=False)
        if items is not None:
            _string_items(items, _path(path, key), found, non_blank=False)
    for key in ("next_action", "necessary_info", "criteria_note"):
        _string(option, key, path, found, non_blank=True)
    risks = _array(option, "risks", path, found)
    if risks is not None:
        if not risks:
            found.errors.append(f"{_path(path, 'risks')} must have at least 1 item")
        _string_items(risks, _path(path, "risks"), found, non_blank=True)


def _forbidden_words(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, word) for every string (value or key) anywhere in the report that has a forbidden word.

    Iterative, so a deeply nested report cannot exhaust the interpreter's recursion limit. All its
    strings are checked in one pass first (`forbidden_in_any`); only a report with a hit is walked
    again with paths, string by string.
    """
    if not forbidden_in_any(_strings(report), ADVISOR_FORBIDDEN):
        return []
    hits: list[tuple[str, str]] = []
    stack: list[tuple[str, object]] = [("", report)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            word = forbidden_in(value, ADVISOR_FORBIDDEN)
            if word is not None:
                hits.append((path or "report", word))
        elif isinstance(value, dict):
            for key in value:
                key_word = forbidden_in(str(key), ADVISOR_FORBIDDEN)
                if key_word is not None:
                    hits.append((f"{_path(path, quote(str(key)))} (key)", key_word))
            stack.extend((_path(path, str(key)), value[key]) for key in reversed(list(value)))
        elif isinstance(value, list):
            stack.extend((_path(path, index), item) for index, item in reversed(list(enumerate(value))))
    return hits


def _strings(report: dict[str, Any]) -> list[str]:
    """Every string in the report, values and keys (as `_forbidden_words` sees them), in no particular order."""
    found: list[str] = []
    stack: list[object] = [report]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            found += map(str, value)
            stack += value.values()
        elif isinstance(value, list):
            stack += value
    return found


_OPTIONAL_OPTION_KEYS = ("description", "pros", "cons", "suggested_status")


def without_null_optionals(kind: ReportKind, report: dict[str, Any]) -> dict[str, Any]:
    """A copy of a report that passed, with null optional fields removed, ready for `msgspec.convert`."""

    def strip(item: object, keys: tuple[str, ...]) -> object:
        return {k: v for k, v in item.items() if not (k in keys and v is None)} if isinstance(item, dict) else item

    cleaned = dict(report)
    if kind == "advisor":
        cleaned = {k: v for k, v in cleaned.items() if not (k == "criteria" and v is None)}
        cleaned["options"] = [strip(o, _OPTIONAL_OPTION_KEYS) for o in cleaned["options"]]
        return cleaned
    cleaned["decomposition_proposals"] = [
        {**p, "suggested_children": [strip(c, ("suggested_status",)) for c in p["suggested_children"]]}
        for p in cleaned["decomposition_proposals"]
    ]
    return cleaned


RULES: dict[ReportKind, Rules] = {"organizer": _organizer_rules, "advisor": _advisor_rules}


def validate_report(
    kind: ReportKind,
    report: object,
    valid_node_ids: Iterable[str],
    *,
    errors: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> ValidationResult:
    """The validator for `kind` (the run loop and the validate endpoint use the same rules).

    `errors` and `warnings` found beside the rules (an Advisor off its focus, copied prompt text, a report that
    mixes dashboard nodes up) join the verdict, capped with the rules' own (`MAX_MESSAGES`).
    """
    return _judged(report, valid_node_ids, RULES[kind], errors, warnings)
