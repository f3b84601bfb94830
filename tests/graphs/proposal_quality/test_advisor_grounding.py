"""The embedded Advisor builds its options from the node (issue 13 item 12): title, children, status, neighbours.

A table of different nodes: each report must pass the validator with no warning, name only dashboard
ids, and mention what is particular to its node (its kind of work, its children, the related node, the
parts of its title, its tray neighbours). Across the table no two nodes get the same options or the
same risks: a venue booking and a database migration are not advised alike.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.drafting.advisor import advisor_report
from graphs.proposal_quality.validator import validate_advisor_report


def n(
    node_id: str, title: str, status: str = "todo", *, tray: str | None = None, parent: str | None = None
) -> BoardNode:
    return BoardNode(id=node_id, title=title, status=status, tray=tray or status, parent_id=parent)


@dataclass(frozen=True)
class Case:
    """A board, the node to advise on, and what the options must mention because of that node."""

    nodes: list[BoardNode]
    focus: str
    mentions: list[str]
    in_labels: list[str] = field(default_factory=list)


CASES: dict[str, Case] = {
    "venue-booking": Case([n("v", "会場の予約", "doing")], "v", ["会場の予約", "空き状況"]),
    "database-migration": Case(
        [n("m", "PostgreSQLへの移行", "doing"), n("t", "PostgreSQL移行後の性能テスト", "todo")],
        "m",
        ["元へ戻す", "PostgreSQL移行後の性能テスト"],
        in_labels=["PostgreSQL移行後の性能テスト"],
    ),
    "children-one-on-hold": Case(
        [
            n("r", "リリース準備"),
            n("c1", "告知文の作成", "done", parent="r"),
            n("c2", "当日の連絡体制", "todo", parent="r"),
            n("c3", "会場の予約", "保留", parent="r"),
        ],
        "r",
        ["会場の予約", "当日の連絡体制"],
        in_labels=["会場の予約"],
    ),
    "children-mostly-done": Case(
        [
            n("p", "新人研修", "doing"),
            n("k1", "研修資料の作成", "done", parent="p"),
            n("k2", "講師の手配", "done", parent="p"),
            n("k3", "アンケートの集計", "todo", parent="p"),
        ],
        "p",
        ["アンケートの集計"],
        in_labels=["を閉じる"],
    ),
    "title-lists-parts": Case(
        [n("x", "告知文の作成・当日の連絡体制")], "x", ["当日の連絡体制"], in_labels=["「告知文の作成」から"]
    ),
    "crowded-tray": Case(
        [n("a", "請求書の発行", tray="今週"), n("b", "名刺の発注", tray="今週"), n("c", "備品の棚卸し", tray="今週")],
        "a",
        ["名刺の発注", "備品の棚卸し"],
    ),
    "done-with-follow-up": Case(
        [n("d", "予算の確認", "done"), n("e", "予算の執行", "todo")], "d", ["予算の執行"], in_labels=["引き継ぐ"]
    ),
    "on-hold-research": Case([n("h", "ベンダー選定", "保留")], "h", ["結論を出せる"], in_labels=["保留を解いて"]),
    "english-migration-with-child": Case(
        [n("g", "Migrate billing to PostgreSQL", "doing"), n("g1", "Backfill invoices", "todo", parent="g")],
        "g",
        ["Backfill invoices", "元へ戻す"],
    ),
}


def report_of(case: Case) -> tuple[Board, dict[str, Any]]:
    board = Board.of(case.nodes)
    return board, advisor_report(board, focus_id=case.focus, intent=None, notes=[])


def texts(report: dict[str, Any]) -> str:
    return "\n".join(str(value) for option in report["options"] for value in option.values())


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_options_come_from_the_node_and_pass_the_gate(case: Case) -> None:
    board, report = report_of(case)
    result = validate_advisor_report(report, board.valid_ids)
    assert result.ok, result.errors
    assert result.warnings == []
    assert report["target_node_id"] == case.focus
    assert 2 <= len(report["options"]) <= 3
    title = board.title_of(case.focus)
    assert any(title in option["label"] for option in report["options"]), "the node's own title is in a label"
    written = texts(report)
    for mention in case.mentions:
        assert mention in written, mention
    labels = " ".join(option["label"] for option in report["options"])
    for mention in case.in_labels:
        assert mention in labels, mention
    assert len({option["label"] for option in report["options"]}) == len(report["options"])


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(CASES, 2)))
def test_different_nodes_get_different_options_and_risks(first: str, second: str) -> None:
    one, two = report_of(CASES[first])[1], report_of(CASES[second])[1]
    assert [o["label"] for o in one["options"]] != [o["label"] for o in two["options"]]
    risks_one = {risk for option in one["options"] for risk in option["risks"]}
    risks_two = {risk for option in two["options"] for risk in option["risks"]}
    assert risks_one != risks_two
    assert [o["next_action"] for o in one["options"]] != [o["next_action"] for o in two["options"]]


def test_venue_and_migration_share_no_risk() -> None:
    """The issue's own pair: not one risk in common."""
    venue = report_of(CASES["venue-booking"])[1]
    migration = report_of(CASES["database-migration"])[1]
    shared = {r for o in venue["options"] for r in o["risks"]} & {r for o in migration["options"] for r in o["risks"]}
    assert shared == set()


def test_a_child_is_never_offered_as_a_related_node() -> None:
    case = CASES["children-one-on-hold"]
    report = report_of(case)[1]
    assert "関連する" not in texts(report)
