"""A report that mixes up dashboard nodes is warned; an Advisor off its focus is an error."""

from __future__ import annotations

import time

import pytest

from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.board_agreement import board_disagreements, focus_problems
from graphs.proposal_quality.validator import MAX_MESSAGES, validate_report

BOARD = Board.of(
    [
        BoardNode(id="n1", title="会場の予約", status="todo", tray="todo"),
        BoardNode(id="n2", title="告知", status="", tray="進行中"),
        BoardNode(
            id="n3", title="推奨設定の見直しと、関係者への確認依頼と、予算の再計算と、日程の再調整", status="", tray=""
        ),
        BoardNode(id="n4", title="下見", status="保留", tray="保留"),
        BoardNode(id="n5", title="見積もりを確認してください", status="todo", tray=""),  # quoted 見積もりを確認する
        BoardNode(id="n6", title="見積もりを確認する", status="todo", tray=""),
    ]
)


@pytest.mark.parametrize(
    ("target", "title", "status", "warned"),
    [
        pytest.param("n1", "会場の予約", "todo", [], id="as-written"),
        pytest.param("n1", " 会場の 予約 ", "TODO", [], id="spacing-and-case"),
        pytest.param("n1", "", "", [], id="nothing-said"),
        pytest.param("n1", "「会場の予約」", "未着手", [], id="quoted-and-same-kind-of-status"),
        pytest.param("n2", "告知", "doing", [], id="status-from-the-tray"),
        pytest.param("n3", "推薦設定の見直しと、関係者への確認…", "", [], id="rephrased-and-cut"),
        pytest.param("n1", "ケータリングの手配", "", [], id="made-up-is-not-read-as-a-mix-up"),
        pytest.param("n1", "会場の…", "", [], id="cut"),
        pytest.param(
            "n1", "告知", "todo", ["target_title '告知' is the title of node 'n2', not of 'n1'"], id="mixed-up"
        ),
        pytest.param(
            "n1", "会場の予約", "done", ["current_status 'done' is not the dashboard's status of 'n1'"], id="done"
        ),
        pytest.param(
            "n4", "下見", "進行中", ["current_status '進行中' is not the dashboard's status of 'n4'"], id="held"
        ),
        pytest.param("n1", "会場の予約", "レビュー待ち", [], id="an-unknown-status-word"),
        pytest.param("n9", "告知", "done", [], id="off-the-board-is-the-validators"),
        pytest.param("n5", "見積もりを確認する", "", [], id="the-engines-own-rewording-of-its-title"),
        pytest.param(
            "n6", "見積もりを確認してください", "", ["target_title '見積もりを確認してください'"], id="the-other-way"
        ),
    ],
)
def test_an_advisor_report_that_mixes_its_target_up_is_warned(
    target: str, title: str, status: str, warned: list[str]
) -> None:
    report = {"target_node_id": target, "target_title": title, "current_status": status}
    found = board_disagreements("advisor", report, BOARD)
    assert len(found) == len(warned), found
    for message, start in zip(found, warned, strict=True):
        assert message.startswith(start), message


def test_an_organizer_decomposition_of_a_node_by_another_nodes_title_is_warned() -> None:
    report = {
        "decomposition_proposals": [
            {"target_node_id": "n1", "target_title": "会場の予約"},
            {"target_node_id": "n2", "target_title": "会場の予約"},
            "junk",
        ]
    }
    assert board_disagreements("organizer", report, BOARD) == [
        "decomposition_proposals[1].target_title '会場の予約' is the title of node 'n1', not of 'n2' ('告知')"
    ]


@pytest.mark.parametrize(
    ("target", "focus", "errors"),
    [
        ("n1", "n1", 0),
        ("n2", "n1", 1),
        ("n9", "n1", 0),  # not on the board: the validator's error, not a second one
        ("n2", None, 0),
    ],
)
def test_an_advisor_report_off_the_focus_node_is_an_error(target: str, focus: str | None, errors: int) -> None:
    found = focus_problems("advisor", {"target_node_id": target}, focus, BOARD)
    assert len(found) == errors
    assert focus_problems("organizer", {"target_node_id": target}, focus, BOARD) == []


def test_hostile_titles_and_many_proposals_cost_little_and_stay_bounded() -> None:
    """A title of 2,000 forbidden words and 5,000 proposals naming it: linear work, and a bounded answer."""
    long_title = "推奨" * 1_000
    board = Board.of(
        [
            BoardNode(id="n1", title=long_title, status="todo", tray=""),
            BoardNode(id="n2", title="x", status="", tray=""),
        ]
    )
    report = {"decomposition_proposals": [{"target_node_id": "n1", "target_title": "x"}] * 5_000}
    started = time.perf_counter()
    found = board_disagreements("organizer", report, board)
    assert time.perf_counter() - started < 2.0  # 20 s before: every proposal redid the engine's rewording
    assert len(found) == 5_000
    assert max(map(len, found)) < 300  # the title is quoted cut, not whole

    # Counted and capped with the rules' own warnings (300 short labels), the mix-ups first.
    groups = [{"group_label": "g", "reason": "r", "node_ids": ["n1"]}] * 300
    full = {"decomposition_proposals": [], "grouping_proposals": groups, "relation_proposals": [], "summary": "まず"}
    verdict = validate_report("organizer", full, ["n1", "n2"], warnings=found)
    assert len(verdict.warnings) == MAX_MESSAGES
    assert verdict.warnings[0] == found[0]
    assert verdict.warnings[-1] == f"... and {5_000 + 300 - MAX_MESSAGES + 1} more"
