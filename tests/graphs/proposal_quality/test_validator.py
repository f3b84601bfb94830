"""The validator (seed 004 §3, §5): the ten samples pass; every Must rule broken on every sample it applies to fails.

Each mutation breaks exactly one Must rule of a valid sample report and names the message the
validator must give (exact path, seed wording). The mutations are applied to every sample they fit,
so each rule is checked against several report shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.proposal_quality import AdvisorReport, OrganizerReport, ReportKind
from graphs.proposal_quality.validator import (
    FIELDS,
    MAX_MESSAGES,
    validate_advisor_report,
    validate_organizer_report,
    validate_report,
    without_null_optionals,
)
from tests.graphs.proposal_quality.samples import ADVISOR_SAMPLES, ORGANIZER_SAMPLES, Sample

Report = dict[str, Any]
Mutation = Callable[[Report, Sample], str | None]
"""Breaks the report in place and returns the expected error, or None when it does not fit the sample."""

GHOST = "ghost"


# --- Organizer mutations --------------------------------------------------------------------------


def _drop(key: str) -> Mutation:
    def mutate(report: Report, sample: Sample) -> str:
        del report[key]
        return f"{key} is required"

    return mutate


def _summary(value: object, expected: str) -> Mutation:
    def mutate(report: Report, sample: Sample) -> str:
        report["summary"] = value
        return expected

    return mutate


def _first(key: str, change: Callable[[dict[str, Any], int], str]) -> Mutation:
    """Apply `change` to the first item of `key` (None when the sample has none)."""

    def mutate(report: Report, sample: Sample) -> str | None:
        items = report[key]
        return change(items[0], 0) if items else None

    return mutate


def _set(field: str, value: Any, message: str) -> Callable[[dict[str, Any], int], str]:
    def change(item: dict[str, Any], index: int) -> str:
        item[field] = value
        return message.format(i=index)

    return change


def _delete(field: str, message: str) -> Callable[[dict[str, Any], int], str]:
    def change(item: dict[str, Any], index: int) -> str:
        del item[field]
        return message.format(i=index)

    return change


def _ghost_group(report: Report, sample: Sample) -> str:
    report["grouping_proposals"].append({"group_label": "所属不明", "reason": "理由", "node_ids": [GHOST]})
    index = len(report["grouping_proposals"]) - 1
    return f"grouping_proposals[{index}].node_ids[0] 'ghost' is not in valid node list"


def _one_child(item: dict[str, Any], index: int) -> str:
    item["suggested_children"] = item["suggested_children"][:1]
    return f"decomposition_proposals[{index}].suggested_children must have at least 2 items"


def _child(field: str) -> Callable[[dict[str, Any], int], str]:
    def change(item: dict[str, Any], index: int) -> str:
        del item["suggested_children"][0][field]
        return f"decomposition_proposals[{index}].suggested_children[0].{field} is required"

    return change


FORBIDDEN_PHRASE = "contains forbidden phrase '{phrase}' (e.g. べき, してください)"

ORGANIZER_MUTATIONS: dict[str, Mutation] = {
    **{f"missing-{key}": _drop(key) for key in ORGANIZER_SAMPLES[0].report},
    "summary-empty": _summary("", "summary must be non-empty"),
    "summary-blank": _summary(" \n\t", "summary must be non-empty"),
    "summary-not-string": _summary(5, "summary must be a string"),
    "summary-beki": _summary("まず整理するべきです。", "summary " + FORBIDDEN_PHRASE.format(phrase="べき")),
    "summary-kudasai": _summary("まず確認してください。", "summary " + FORBIDDEN_PHRASE.format(phrase="してください")),
    "summary-hitsuyou": _summary("まず見直しが必要です。", "summary " + FORBIDDEN_PHRASE.format(phrase="が必要です")),
    "grouping-invented-id": _ghost_group,
    "decomposition-invented-target": _first(
        "decomposition_proposals",
        _set("target_node_id", GHOST, "decomposition_proposals[{i}].target_node_id 'ghost' is not in valid node list"),
    ),
    "relation-invented-from": _first(
        "relation_proposals",
        _set("from_node_id", GHOST, "relation_proposals[{i}].from_node_id 'ghost' is not in valid node list"),
    ),
    "relation-invented-to": _first(
        "relation_proposals",
        _set("to_node_id", GHOST, "relation_proposals[{i}].to_node_id 'ghost' is not in valid node list"),
    ),
    "decomposition-reason-empty": _first(
        "decomposition_proposals",
        _set("reason", "", "decomposition_proposals[{i}].reason is required and non-empty"),
    ),
    "decomposition-reason-missing": _first(
        "decomposition_proposals",
        _delete("reason", "decomposition_proposals[{i}].reason is required and non-empty"),
    ),
    "grouping-reason-blank": _first(
        "grouping_proposals", _set("reason", "　 ", "grouping_proposals[{i}].reason is required and non-empty")
    ),
    "relation-reason-missing": _first(
        "relation_proposals", _delete("reason", "relation_proposals[{i}].reason is required and non-empty")
    ),
    "decomposition-one-child": _first("decomposition_proposals", _one_child),
    "child-without-title": _first("decomposition_proposals", _child("title")),
    "child-without-context": _first("decomposition_proposals", _child("context")),
    "decomposition-reason-hitsuyou": _first(
        "decomposition_proposals",
        _set(
            "reason",
            "分解が必要です",
            "decomposition_proposals[{i}].reason " + FORBIDDEN_PHRASE.format(phrase="が必要です"),
        ),
    ),
    "grouping-reason-kudasai": _first(
        "grouping_proposals",
        _set(
            "reason",
            "まとめて整理してください",
            "grouping_proposals[{i}].reason " + FORBIDDEN_PHRASE.format(phrase="してください"),
        ),
    ),
    "relation-reason-beki": _first(
        "relation_proposals",
        _set("reason", "つなぐべき", "relation_proposals[{i}].reason " + FORBIDDEN_PHRASE.format(phrase="べき")),
    ),
}


# --- Advisor mutations ----------------------------------------------------------------------------


def _option_field(field: str, value: Any = None, message: str = "options[0].{field} is required") -> Mutation:
    def mutate(report: Report, sample: Sample) -> str:
        if value is None:
            del report["options"][0][field]
        else:
            report["options"][0][field] = value
        return message.format(field=field)

    return mutate


def _set_top(key: str, value: Any, expected: str) -> Mutation:
    def mutate(report: Report, sample: Sample) -> str:
        report[key] = value
        return expected

    return mutate


def _one_option(report: Report, sample: Sample) -> str:
    report["options"] = report["options"][:1]
    return "options must have at least 2 items"


def _forbidden_at(path: tuple[str | int, ...], text: str, word: str) -> Mutation:
    def mutate(report: Report, sample: Sample) -> str:
        holder: Any = report
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = f"{holder.get(path[-1], '') if isinstance(holder, dict) else holder[path[-1]]}{text}"
        shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
        return f"{shown} contains forbidden word '{word}' (e.g. ベスト, 推奨)"

    return mutate


def _unknown_target(report: Report, sample: Sample) -> str:
    report["target_node_id"] = GHOST if sample.nodes else "n1"
    return "target_node_id is not in valid node list"


ADVISOR_MUTATIONS: dict[str, Mutation] = {
    **{
        f"missing-{key}": _drop(key)
        for key in ("target_node_id", "target_title", "current_status", "options", "next_decision", "summary")
    },
    "one-option": _one_option,
    **{f"option-without-{f}": _option_field(f) for f in ("next_action", "necessary_info", "criteria_note", "risks")},
    "option-blank-next-action": _option_field("next_action", "  "),
    "option-no-risks": _option_field("risks", [], "options[0].risks must have at least 1 item"),
    "option-risks-not-array": _option_field("risks", "高い", "options[0].risks must be an array"),
    "target-not-in-list": _unknown_target,
    "next-decision-blank": _set_top("next_decision", "  ", "next_decision must be non-empty"),
    "summary-empty": _set_top("summary", "", "summary must be non-empty"),
    "summary-suisho": _forbidden_at(("summary",), "推奨します", "推奨"),
    "next-decision-subeki": _forbidden_at(("next_decision",), "どれにすべきか", "すべき"),
    "label-best": _forbidden_at(("options", 1, "label"), "（ベスト）", "ベスト"),
    "risk-seikai": _forbidden_at(("options", 0, "risks", 0), "正解がない", "正解"),
    "description-halfwidth-best": _forbidden_at(("options", 1, "description"), "ﾍﾞｽﾄ", "ベスト"),
    "criterion-zero-width": _forbidden_at(("criteria", 0, "description"), "推\u200b奨", "推奨"),
}


def _cases(samples: list[Sample], mutations: dict[str, Mutation]) -> list[Any]:
    cases = []
    for sample in samples:
        for name, mutate in mutations.items():
            report = sample.fresh_report()
            expected = mutate(report, sample)
            if expected is not None:
                cases.append(pytest.param(sample, report, expected, id=f"{sample.id}-{name}"))
    return cases


# --- tests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", ORGANIZER_SAMPLES, ids=lambda s: s.id)
def test_organizer_samples_pass(sample: Sample) -> None:
    result = validate_organizer_report(sample.report, sample.valid_ids)
    assert result.ok
    assert result.errors == []
    assert result.warnings == []
    msgspec.convert(sample.report, OrganizerReport)


@pytest.mark.parametrize("sample", ADVISOR_SAMPLES, ids=lambda s: s.id)
def test_advisor_samples_pass(sample: Sample) -> None:
    result = validate_advisor_report(sample.report, sample.valid_ids)
    assert result.ok
    assert result.errors == []
    assert result.warnings == []
    msgspec.convert(sample.report, AdvisorReport)


@pytest.mark.parametrize(("sample", "report", "expected"), _cases(ORGANIZER_SAMPLES, ORGANIZER_MUTATIONS))
def test_organizer_must_rules(sample: Sample, report: Report, expected: str) -> None:
    result = validate_organizer_report(report, sample.valid_ids)
    assert not result.ok
    assert expected in result.errors, result.errors


@pytest.mark.parametrize(("sample", "report", "expected"), _cases(ADVISOR_SAMPLES, ADVISOR_MUTATIONS))
def test_advisor_must_rules(sample: Sample, report: Report, expected: str) -> None:
    result = validate_advisor_report(report, sample.valid_ids)
    assert not result.ok
    assert expected in result.errors, result.errors


@pytest.mark.parametrize(
    ("samples", "mutations"), [(ORGANIZER_SAMPLES, ORGANIZER_MUTATIONS), (ADVISOR_SAMPLES, ADVISOR_MUTATIONS)]
)
def test_every_mutation_applies_to_some_sample(samples: list[Sample], mutations: dict[str, Mutation]) -> None:
    applied = {case.id.split("-", 1)[1] for case in _cases(samples, mutations)}
    assert applied == set(mutations)


def test_zero_nodes_allow_an_empty_advisor_target_only() -> None:
    a4 = next(s for s in ADVISOR_SAMPLES if s.id == "A4")
    assert validate_advisor_report(a4.report, []).ok
    with_nodes = validate_advisor_report(a4.report, ["n1"])
    assert with_nodes.errors == ["target_node_id is not in valid node list"]


@pytest.mark.parametrize("target", ["   ", " \t ", "\u200b", "n1"])
def test_with_zero_nodes_only_the_empty_string_is_a_target(target: str) -> None:
    """No node means no id to point at: a blank one is an id that was not in the input (it was rendered)."""
    a4 = next(s for s in ADVISOR_SAMPLES if s.id == "A4")
    assert validate_advisor_report(a4.fresh_report() | {"target_node_id": target}, []).errors == [
        "target_node_id is not in valid node list"
    ]


def test_a_valid_advisor_target_id_is_not_scanned_for_words() -> None:
    report = ADVISOR_SAMPLES[0].fresh_report() | {"target_node_id": "推奨-1"}
    assert validate_advisor_report(report, ["推奨-1"]).ok
    assert "target_node_id contains forbidden word '推奨' (e.g. ベスト, 推奨)" in (
        validate_advisor_report(report, ["n1"]).errors
    )


def test_forbidden_words_in_unknown_fields_and_keys_count() -> None:
    report = ADVISOR_SAMPLES[0].fresh_report() | {"extra": {"推奨案": ["a", {"b": "正解"}]}}
    errors = validate_advisor_report(report, ["n1"]).errors
    assert errors == [
        f"extra is not a field here, so nothing reads it ({', '.join(sorted(FIELDS['advisor']))})",
        "extra.'推奨案' (key) contains forbidden word '推奨' (e.g. ベスト, 推奨)",
        "extra.推奨案[1].b contains forbidden word '正解' (e.g. ベスト, 推奨)",
    ]


def test_organizer_forbidden_phrases_only_in_summary_and_reasons() -> None:
    report = ORGANIZER_SAMPLES[3].fresh_report()
    report["decomposition_proposals"][0]["suggested_children"][0]["context"] = "準備が必要です"
    report["decomposition_proposals"][0]["target_title"] = "やるべきこと"
    assert validate_organizer_report(report, ["n4"]).ok


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        pytest.param([], ["report must be an object"], id="array"),
        pytest.param("{}", ["report must be an object"], id="string"),
        pytest.param(None, ["report must be an object"], id="null"),
        pytest.param(
            {"decomposition_proposals": {}, "grouping_proposals": "x", "relation_proposals": None, "summary": "まず"},
            [
                "decomposition_proposals must be an array",
                "grouping_proposals must be an array",
                "relation_proposals must be an array",
            ],
            id="wrong-array-types",
        ),
        pytest.param(
            {
                "decomposition_proposals": [1],
                "grouping_proposals": [{"group_label": 3, "reason": "r", "node_ids": "n1"}],
                "relation_proposals": [{"from_node_id": 1, "to_node_id": "n1", "relation_type": "関連", "reason": "r"}],
                "summary": "まず",
            },
            [
                "decomposition_proposals[0] must be an object",
                "grouping_proposals[0].group_label must be a string",
                "grouping_proposals[0].node_ids must be an array",
                "relation_proposals[0].from_node_id must be a string",
            ],
            id="wrong-item-types",
        ),
        pytest.param(
            {
                "decomposition_proposals": [
                    {
                        "target_node_id": "n1",
                        "target_title": "t",
                        "reason": "r",
                        "suggested_children": [{"title": "a", "context": "b", "suggested_status": 1}, "c"],
                    }
                ],
                "grouping_proposals": [{"group_label": "ab", "reason": "r", "node_ids": ["n1", 2]}],
                "relation_proposals": [],
                "summary": "まず",
            },
            [
                "decomposition_proposals[0].suggested_children[0].suggested_status must be a string",
                "decomposition_proposals[0].suggested_children[1] must be an object",
                "grouping_proposals[0].node_ids[1] must be a string",
            ],
            id="nested-wrong-types",
        ),
        pytest.param(
            {
                "decomposition_proposals": [],
                "grouping_proposals": [
                    {"group_label": "ab", "reason": "r", "node_ids": ["n1", ["n1"], {"id": "n1"}, "ghost", None]}
                ],
                "relation_proposals": [],
                "summary": "まず",
            },
            [
                "grouping_proposals[0].node_ids[1] must be a string",
                "grouping_proposals[0].node_ids[2] must be a string",
                "grouping_proposals[0].node_ids[3] 'ghost' is not in valid node list",
                "grouping_proposals[0].node_ids[4] must be a string",
            ],
            id="unhashable-ids",
        ),
    ],
)
def test_raw_json_of_the_wrong_shape_gives_errors(report: object, expected: list[str]) -> None:
    assert validate_organizer_report(report, ["n1"]).errors == expected


def test_advisor_wrong_types() -> None:
    report = ADVISOR_SAMPLES[0].fresh_report()
    report["options"][0] |= {"pros": "good", "cons": [1], "description": 5, "risks": ["", "x"]}
    report["criteria"] = [{"name": "期限"}, "x"]
    report["current_status"] = None
    assert validate_advisor_report(report, ["n1"]).errors == [
        "current_status must be a string",
        "options[0].description must be a string",
        "options[0].pros must be an array",
        "options[0].cons[0] must be a string",
        "options[0].risks[0] must be a non-empty string",
        "criteria[0].description is required",
        "criteria[1] must be an object",
    ]


def test_null_optional_fields_count_as_absent() -> None:
    report = ADVISOR_SAMPLES[0].fresh_report()
    report["options"][0] |= {"description": None, "pros": None, "suggested_status": None}
    report["criteria"] = None
    result = validate_advisor_report(report, ["n1"])
    assert result.ok
    assert result.warnings == ["criteria should have at least 2 items"]
    msgspec.convert(without_null_optionals("advisor", report), AdvisorReport)


@pytest.mark.parametrize(
    ("kind", "change", "warning"),
    [
        ("organizer", lambda r: r.update(summary="整理の提案です。"), "summary could suggest next step (e.g. まず◯◯)"),
        (
            "organizer",
            lambda r: r["grouping_proposals"][0].update(group_label="A"),
            "grouping_proposals[0].group_label should be at least 2 characters",
        ),
        (
            "organizer",
            lambda r: r["relation_proposals"][0].update(relation_type="前"),
            "relation_proposals[0].relation_type should be at least 2 characters",
        ),
        ("advisor", lambda r: r.pop("criteria"), "criteria should have at least 2 items"),
        ("advisor", lambda r: r.update(criteria=r["criteria"][:1]), "criteria should have at least 2 items"),
        (
            "advisor",
            lambda r: r["options"][1].update(label="書き始める"),
            "options[1].label should contain 案/パターン/候補",
        ),
    ],
)
def test_should_rules_warn_but_never_fail(kind: ReportKind, change: Callable[[Report], Any], warning: str) -> None:
    sample = ORGANIZER_SAMPLES[2] if kind == "organizer" else ADVISOR_SAMPLES[2]
    report = sample.fresh_report()
    change(report)
    result = validate_report(kind, report, sample.valid_ids)
    assert result.ok
    assert result.errors == []
    assert result.warnings == [warning]


def test_messages_are_capped() -> None:
    report = ORGANIZER_SAMPLES[0].fresh_report()
    report["grouping_proposals"] = [{"group_label": "ab", "reason": "r", "node_ids": [f"x{i}"]} for i in range(500)]
    result = validate_organizer_report(report, [])
    assert len(result.errors) == MAX_MESSAGES
    assert result.errors[-1] == "... and 401 more"


def test_quoted_ids_are_bounded_and_printable() -> None:
    report = ORGANIZER_SAMPLES[0].fresh_report()
    report["grouping_proposals"] = [{"group_label": "ab", "reason": "r", "node_ids": ["a\nb" + "x" * 500]}]
    (error,) = validate_organizer_report(report, []).errors
    assert "\n" not in error
    assert len(error) < 160


def test_deeply_nested_unknown_fields_do_not_exhaust_recursion() -> None:
    deep: Any = "推奨"
    for _ in range(5_000):
        deep = [deep]
    report = ADVISOR_SAMPLES[0].fresh_report() | {"extra": deep}
    errors = validate_advisor_report(report, ["n1"]).errors
    assert len(errors) == 2
    assert errors[0].startswith("extra is not a field here")
    assert errors[1].startswith("extra[0][0]")


# --- properties -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


def _near_valid(samples: list[Sample]) -> st.SearchStrategy[tuple[Sample, Any]]:
    """A valid sample report with some values replaced by arbitrary JSON (keys of the real schema)."""

    def corrupt(sample: Sample, data: st.DataObject) -> tuple[Sample, Any]:
        report = sample.fresh_report()
        for _ in range(data.draw(st.integers(0, 3))):
            holder: Any = report
            while True:
                keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
                if not keys:
                    break
                key = data.draw(st.sampled_from(keys))
                if isinstance(holder[key], dict | list) and data.draw(st.booleans()):
                    holder = holder[key]
                    continue
                holder[key] = data.draw(json_values)
                break
        return sample, report

    return st.tuples(st.sampled_from(samples), st.data()).map(lambda pair: corrupt(*pair))


@settings(max_examples=100, deadline=None)
@given(report=json_values, kind=st.sampled_from(["organizer", "advisor"]))
def test_any_json_gives_a_result_never_an_exception(report: Any, kind: ReportKind) -> None:
    result = validate_report(kind, report, ["n1"])
    assert result.ok == (not result.errors)


@settings(max_examples=100, deadline=None)
@given(case=_near_valid(ORGANIZER_SAMPLES))
def test_an_ok_organizer_report_converts_to_its_type(case: tuple[Sample, Any]) -> None:
    sample, report = case
    result = validate_organizer_report(report, sample.valid_ids)
    if result.ok:
        msgspec.convert(without_null_optionals("organizer", report), OrganizerReport)


@settings(max_examples=100, deadline=None)
@given(case=_near_valid(ADVISOR_SAMPLES))
def test_an_ok_advisor_report_converts_to_its_type(case: tuple[Sample, Any]) -> None:
    sample, report = case
    result = validate_advisor_report(report, sample.valid_ids)
    if result.ok:
        msgspec.convert(without_null_optionals("advisor", report), AdvisorReport)


@pytest.mark.parametrize(
    ("kind", "where", "key"),
    [
        ("advisor", (), "critera"),
        ("advisor", ("options", 0), "suggested_stauts"),
        ("advisor", ("criteria", 1), "descripton"),
        ("organizer", (), "dependency_proposals"),
        ("organizer", ("decomposition_proposals", 0), "target_id"),
        ("organizer", ("decomposition_proposals", 0, "suggested_children", 1), "node_id"),
        ("organizer", ("grouping_proposals", 0), "nodes"),
        ("organizer", ("relation_proposals", 0), "from_id"),
    ],
)
def test_a_key_the_report_type_does_not_have_is_an_error(kind: str, where: tuple[str | int, ...], key: str) -> None:
    """A misspelled key is not read: its value (ids, a status, criteria) would be lost behind an `ok`."""
    wanted = "A1" if kind == "advisor" else "O4" if "decomposition_proposals" in where else "O5"
    sample = next(s for s in (*ADVISOR_SAMPLES, *ORGANIZER_SAMPLES) if s.id == wanted)
    report = sample.fresh_report()
    target: Any = report
    for step in where:
        target = target[step]
    target[key] = ["zzz"]
    verdict = validate_report(kind, report, sample.valid_ids)  # type: ignore[arg-type]
    path = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in where).lstrip(".")
    assert verdict.ok is False
    assert verdict.errors[0].startswith(f"{path}.{key}" if path else key), verdict.errors
    assert "is not a field here, so nothing reads it" in verdict.errors[0]


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (
            lambda r: r["grouping_proposals"][0].update(node_ids=[]),
            "grouping_proposals[0].node_ids must have at least 1 item (a group of no node groups nothing)",
        ),
        (
            lambda r: r["relation_proposals"][0].update(to_node_id=r["relation_proposals"][0]["from_node_id"]),
            "relation_proposals[0].to_node_id {node!r} is the from_node_id: a node is not related to itself",
        ),
    ],
    ids=["empty-group", "self-relation"],
)
def test_a_proposal_about_nothing_is_an_error(edit: Callable[[Report], None], error: str) -> None:
    sample = next(s for s in ORGANIZER_SAMPLES if s.id == "O5")
    report = sample.fresh_report()
    edit(report)
    node = report["relation_proposals"][0]["from_node_id"]
    assert validate_organizer_report(report, sample.valid_ids).errors == [error.format(node=node)]
