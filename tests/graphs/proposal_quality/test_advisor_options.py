"""The Advisor's option templates live in advisor_options.yaml: one per status kind, and nothing else to fill in."""

from __future__ import annotations

import re
from importlib import resources
from string import Formatter
from typing import Any, get_args

import msgspec
import pytest
import yaml

from graphs.config_files import read_typed
from graphs.llm.config import ConfigError
from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.drafting import advisor
from graphs.proposal_quality.drafting.advisor import AdvisorTexts, Draft, advisor_report, advisor_texts
from graphs.proposal_quality.drafting.wording import StatusCategory

PLACEHOLDERS = {"title", "info", "risk", "start"}
"""What `Facts.values` fills in."""
STATUS_WORDS: dict[StatusCategory, str] = {"done": "完了", "hold": "保留", "todo": "未着手", "doing": "進行中"}


def _templates() -> dict[str, Draft]:
    texts = advisor_texts()
    by_status = {f"by_status.{name}": getattr(texts.by_status, name) for name in texts.by_status.__struct_fields__}
    return {**by_status, "gather_information": texts.gather_information, "reopen": texts.reopen}


def test_the_yaml_has_a_template_for_every_status_kind() -> None:
    """Each status kind the vocabulary knows has its own template; a status it does not know carries on (doing)."""
    by_status = advisor_texts().by_status
    known = [category for category in get_args(StatusCategory) if category != "other"]
    assert set(by_status.__struct_fields__) == set(known)
    templates = {category: by_status.of(category) for category in known}
    assert len({template.label for template in templates.values()}) == len(known)  # none stands in for another
    assert by_status.of("other") is by_status.doing


def test_a_yaml_without_one_status_is_refused_at_load(tmp_path: Any) -> None:
    raw = yaml.safe_load(resources.files(advisor.__package__).joinpath("advisor_options.yaml").read_text("utf-8"))
    del raw["by_status"]["hold"]
    path = tmp_path / "advisor_options.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ConfigError, match="hold"):
        read_typed(path, AdvisorTexts)


@pytest.mark.parametrize("name", sorted(_templates()))
def test_templates_use_only_the_placeholders_the_code_fills(name: str) -> None:
    template = _templates()[name]
    texts = [*(v for v in msgspec.structs.astuple(template) if isinstance(v, str)), *template.risks]
    fields = {field for text in texts for _, field, _, _ in Formatter().parse(text) if field is not None}
    assert fields <= PLACEHOLDERS, fields - PLACEHOLDERS
    assert template.risks, "every option names at least one risk"


@pytest.mark.parametrize("category", sorted(STATUS_WORDS))
def test_a_node_of_each_status_gets_its_template_first(category: StatusCategory) -> None:
    node = BoardNode(id="x", title="会場の予約", status=STATUS_WORDS[category], tray="trays")
    report = advisor_report(Board.of([node]), focus_id="x", intent=None, notes=[])
    values = {
        "title": "会場の予約",
        "info": "候補の空き状況と、キャンセルや変更の条件",
        "risk": "",
        "start": "「会場の予約」",
    }
    expected = advisor_texts().by_status.of(category).label.format_map(values)
    assert report["options"][0]["label"] == f"案A: {expected}"


def _node(node_id: str, title: str, status: str, parent: str | None = None) -> BoardNode:
    return BoardNode(id=node_id, title=title, status=status, tray="trays", parent_id=parent)


BRANCH_BOARDS: dict[str, list[BoardNode]] = {
    "by_structure.held_child": [_node("x", "会場の予約", "進行中"), _node("c", "下見", "保留", "x")],
    "by_structure.finish_children": [
        _node("x", "会場の予約", "進行中"),
        _node("c1", "下見", "完了", "x"),
        _node("c2", "見積", "未着手", "x"),
    ],
    "by_structure.next_child": [
        _node("x", "会場の予約", "進行中"),
        _node("c1", "下見", "未着手", "x"),
        _node("c2", "見積", "未着手", "x"),
    ],
    "by_structure.close_with_children": [_node("x", "会場の予約", "進行中"), _node("c", "下見", "完了", "x")],
    "by_structure.first_part": [_node("x", "請求書の発行・送付", "未着手")],
    "by_structure.split": [_node("x", "会場の予約", "未着手")],
    "by_neighbours.hand_over": [_node("x", "会場の予約", "完了"), _node("o", "会場の装飾", "未着手")],
    "by_neighbours.reuse_done": [_node("x", "会場の予約", "未着手"), _node("o", "会場の装飾", "完了")],
    "by_neighbours.together": [_node("x", "会場の予約", "未着手"), _node("o", "会場の装飾", "進行中")],
    "by_neighbours.order_in_tray": [
        _node("x", "会場の予約", "未着手"),
        _node("a", "ログイン画面", "未着手"),
        _node("b", "決済API", "未着手"),
    ],
}
"""A board on which each structure or neighbour option applies to node `x`."""


@pytest.mark.parametrize("name", sorted(BRANCH_BOARDS))
def test_each_structure_and_neighbour_template_is_filled_where_it_applies(name: str) -> None:
    """Every template of the YAML is reached and filled: a placeholder the code does not fill would raise here."""
    section, key = name.split(".")
    template: Draft = getattr(getattr(advisor_texts(), section), key)
    parsed = Formatter().parse(template.label)
    pattern = "".join(re.escape(literal) + (".+" if field is not None else "") for literal, field, _, _ in parsed)
    report = advisor_report(Board.of(BRANCH_BOARDS[name]), focus_id="x", intent=None, notes=[])
    labels = [option["label"] for option in report["options"]]
    assert any(re.fullmatch(f"案[A-C]: {pattern}", label) for label in labels), labels


@pytest.mark.parametrize("name", sorted(advisor_texts().kinds))
def test_each_kinds_info_uses_only_the_title(name: str) -> None:
    """`Facts.info` fills a kind's `info` with the node's title on every request: another field would fail them all."""
    info = advisor_texts().kinds[name].info
    fields = {field for _, field, _, _ in Formatter().parse(info) if field is not None}
    assert fields <= {"title"}, fields
