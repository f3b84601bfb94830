"""The embedded engine: deterministic, grounded reports that pass their own validator, useful on the samples."""

from __future__ import annotations

import unicodedata

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.proposal_quality import Dashboard
from graphs.proposal_quality.board import Board, BoardNode, board_from_dashboard
from graphs.proposal_quality.board_agreement import board_disagreements, focus_problems
from graphs.proposal_quality.drafting.advisor import advisor_report
from graphs.proposal_quality.drafting.organizer import asks_for_decomposition, organizer_report
from graphs.proposal_quality.drafting.wording import neutral, status_category, visible
from graphs.proposal_quality.forbidden_phrases import forbidden_in
from graphs.proposal_quality.validator import (
    ADVISOR_FORBIDDEN,
    ORGANIZER_FORBIDDEN,
    validate_advisor_report,
    validate_organizer_report,
)
from tests.graphs.proposal_quality.samples import ADVISOR_SAMPLES, ORGANIZER_SAMPLES, Sample


def board_of(sample: Sample) -> Board:
    return board_from_dashboard(msgspec.convert(sample.dashboard(), Dashboard))


def node(node_id: str, title: str, status: str = "todo") -> BoardNode:
    return BoardNode(id=node_id, title=title, status=status, tray=status)


@pytest.mark.parametrize("sample", ORGANIZER_SAMPLES, ids=lambda s: s.id)
def test_organizer_reports_pass_their_own_gate(sample: Sample) -> None:
    board = board_of(sample)
    report = organizer_report(board, focus_id=sample.focus, intent=sample.intent)
    result = validate_organizer_report(report, board.valid_ids)
    assert result.ok, result.errors
    assert result.warnings == []
    assert report == organizer_report(board, focus_id=sample.focus, intent=sample.intent)  # deterministic


@pytest.mark.parametrize("sample", ADVISOR_SAMPLES, ids=lambda s: s.id)
def test_advisor_reports_pass_their_own_gate(sample: Sample) -> None:
    board = board_of(sample)
    report = advisor_report(board, focus_id=sample.focus, intent=sample.intent, notes=[])
    result = validate_advisor_report(report, board.valid_ids)
    assert result.ok, result.errors
    assert result.warnings == []
    assert len(report["options"]) >= 2
    if sample.focus:
        assert report["target_node_id"] == sample.focus


def test_o1_without_nodes_says_how_to_start() -> None:
    report = organizer_report(Board.of([]), focus_id=None, intent=None)
    assert report["decomposition_proposals"] == report["grouping_proposals"] == report["relation_proposals"] == []
    assert "まず最初のノード" in report["summary"]


def test_o4_decomposes_on_request_into_the_parts_the_title_lists() -> None:
    sample = next(s for s in ORGANIZER_SAMPLES if s.id == "O4")
    report = organizer_report(board_of(sample), focus_id=None, intent=sample.intent)
    (proposal,) = report["decomposition_proposals"]
    assert proposal["target_node_id"] == "n4"
    assert [c["title"] for c in proposal["suggested_children"]] == ["リリース準備", "告知文の作成", "当日の連絡体制"]
    assert all(c["suggested_status"] == "todo" for c in proposal["suggested_children"])
    assert "ご依頼に沿って" in proposal["reason"]
    assert report["summary"].count("まず") == 1


def test_a_focus_node_without_listed_parts_gets_three_phases() -> None:
    board = Board.of([node("a", "企画書の作成")])
    (proposal,) = organizer_report(board, focus_id="a", intent=None)["decomposition_proposals"]
    assert [c["title"] for c in proposal["suggested_children"]] == [
        "企画書の作成：現状と目的の整理",
        "企画書の作成：作業の洗い出し",
        "企画書の作成：結果の確認",
    ]


def test_without_focus_or_request_nothing_is_decomposed() -> None:
    board = Board.of([node("a", "企画書・見積もり")])
    assert organizer_report(board, focus_id=None, intent="全体を見たい")["decomposition_proposals"] == []
    assert asks_for_decomposition("もう少し細かくしたい")
    assert not asks_for_decomposition(None)


def test_groups_by_status_and_by_shared_title_terms() -> None:
    board = Board.of(
        [
            node("a", "ログイン画面の設計", "todo"),
            node("b", "ログイン機能の実装", "todo"),
            node("c", "ログイン試験", "doing"),
            node("d", "請求書の発行", "doing"),
            node("e", "請求書の送付", "done"),
        ]
    )
    report = organizer_report(board, focus_id=None, intent=None)
    groups = {g["group_label"]: g["node_ids"] for g in report["grouping_proposals"]}
    assert groups == {
        "todoのノード": ["a", "b"],
        "doingのノード": ["c", "d"],
        "「ログイン」関連": ["a", "b", "c"],
    }
    relations = [(r["from_node_id"], r["to_node_id"]) for r in report["relation_proposals"]]
    assert relations == [("d", "e")]  # 請求書 is shared by exactly two nodes
    assert "請求書" in report["relation_proposals"][0]["reason"]


def test_one_status_only_is_not_a_grouping() -> None:
    board = Board.of([node("a", "資料A"), node("b", "資料B")])
    assert organizer_report(board, focus_id=None, intent=None)["grouping_proposals"] == []


@pytest.mark.parametrize(
    ("status", "first_label"),
    [
        ("todo", "案A: 「会場の予約」にすぐ着手する"),
        ("進行中", "案A: 「会場の予約」をこのまま進める"),
        ("完了", "案A: 「会場の予約」を完了として確定する"),
        ("保留", "案A: 「会場の予約」の保留を解いて再開する"),
    ],
)
def test_advisor_options_follow_the_status(status: str, first_label: str) -> None:
    board = Board.of([node("a", "会場の予約", status)])
    report = advisor_report(board, focus_id="a", intent=None, notes=[])
    assert report["options"][0]["label"] == first_label
    assert len(report["options"]) >= 2
    assert report["current_status"] == status


def test_advisor_suggests_only_statuses_the_board_uses() -> None:
    board = Board.of([node("a", "会場の予約", "未着手"), node("b", "予算", "作業中")])
    options = advisor_report(board, focus_id="a", intent=None, notes=[])["options"]
    assert options[0]["suggested_status"] == "作業中"
    assert "suggested_status" not in options[1]
    assert "suggested_status" not in options[2]  # the board has no word for "on hold"


def test_advisor_picks_the_node_the_intent_names_else_the_first_open_one() -> None:
    board = Board.of([node("a", "予算の確認", "done"), node("b", "会場の予約"), node("c", "招待状の発送")])
    assert advisor_report(board, focus_id=None, intent="招待状をどうするか", notes=[])["target_node_id"] == "c"
    assert advisor_report(board, focus_id=None, intent=None, notes=[])["target_node_id"] == "b"


def test_a4_has_no_target_and_options_for_starting() -> None:
    report = advisor_report(Board.of([]), focus_id=None, intent=None, notes=[])
    assert report["target_node_id"] == ""
    assert len(report["options"]) == 2
    assert validate_advisor_report(report, []).ok


def test_intent_and_notes_become_criteria() -> None:
    board = Board.of([node("a", "会場の予約")])
    report = advisor_report(board, focus_id="a", intent="費用を抑えたい", notes=["今週中に決める", " "])
    names = [c["name"] for c in report["criteria"]]
    assert names == ["期限", "作業量", "不確実性", "空き状況", "ご意向との合致", "制約"]  # 空き状況: a booking
    assert "今週中に決める" in report["criteria"][-1]["description"]
    assert "費用を抑えたい" in report["summary"]


@pytest.mark.parametrize(
    "text",
    [
        "推奨設定の見直し",
        "やるべきこと",
        "ﾍﾞｽﾄな方法",
        "正解を探す",
        "確認してください",
        "対応が必要です",
        "推\u200b奨",
        "べべきき",
    ],
)
def test_neutral_removes_every_forbidden_phrase(text: str) -> None:
    assert forbidden_in(neutral(text), (*ORGANIZER_FORBIDDEN, *ADVISOR_FORBIDDEN)) is None


def test_neutral_bounds_and_flattens() -> None:
    assert neutral("a\nb\t c") == "a b c"
    assert neutral("x" * 100, 10) == "x" * 9 + "…"


@pytest.mark.parametrize(
    ("status", "category"),
    [
        ("Done", "done"),
        ("in_progress", "doing"),
        ("IN-PROGRESS", "doing"),
        ("未着手", "todo"),
        ("保留", "hold"),
        ("x", "other"),
    ],
)
def test_status_category(status: str, category: str) -> None:
    assert status_category(status) == category


# --- properties: any dashboard, hostile titles included -------------------------------------------

HOSTILE = st.sampled_from(
    ["推奨", "ベスト", "正解", "すべき", "べき", "してください", "が必要です", "ﾍﾞｽﾄ", "\u200b", "、", "・"]
)
titles = st.lists(st.one_of(HOSTILE, st.text(max_size=6)), max_size=14).map("".join)  # past the 40 characters quoted
nodes = st.lists(
    st.builds(
        lambda i, title, status: node(f"id-{i}", title, status),
        st.integers(0, 30),
        titles,
        st.sampled_from(["todo", "doing", "done", "保留", "", "推奨"]),
    ),
    unique_by=lambda n: n.id,  # as on every dashboard a request may carry (check_dashboard)
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(nodes=nodes, focus=st.integers(0, 30), intent=st.one_of(st.none(), titles, st.just("分解して")))
def test_any_dashboard_gives_valid_grounded_reports(nodes: list[BoardNode], focus: int, intent: str | None) -> None:
    board = Board.of(nodes)
    focus_id = f"id-{focus}" if board.get(f"id-{focus}") else None
    organizer = organizer_report(board, focus_id=focus_id, intent=intent)
    assert validate_organizer_report(organizer, board.valid_ids).errors == []
    advisor = advisor_report(board, focus_id=focus_id, intent=intent, notes=[intent or ""])
    assert validate_advisor_report(advisor, board.valid_ids).errors == []
    assert advisor["target_node_id"] in (board.valid_ids if board.nodes else {""})
    # What the engine quotes (titles rephrased and cut, statuses) agrees with the board, and it answers the focus.
    assert board_disagreements("organizer", organizer, board) == []
    assert board_disagreements("advisor", advisor, board) == []
    assert focus_problems("advisor", advisor, focus_id, board) == []


def test_visible_matches_its_reference_on_every_code_point() -> None:
    """The printable fast path and the search agree with a character-by-character filter: Cc a space, Cf out."""

    def reference(text: str) -> str:
        kept = {"Cc": " ", "Cf": ""}
        return unicodedata.normalize("NFKC", "".join(kept.get(unicodedata.category(ch), ch) for ch in text))

    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(points), 64):
        chunk = "".join(points[start : start + 64])
        assert visible(chunk) == reference(chunk), hex(ord(chunk[0]))
    assert visible("推奨　の見直し") == reference("推奨　の見直し")
    assert visible("cafe\u200b\u0301") == visible("café") == "café"  # taken out before NFKC composes


LISTED = "告知文の作成、会場の予約、予算の確認"


@pytest.mark.parametrize(
    ("children", "status", "intent", "proposed"),
    [
        pytest.param([], "todo", None, ["告知文の作成", "会場の予約", "予算の確認"], id="parts"),
        pytest.param(["会場の予約"], "todo", None, ["告知文の作成", "予算の確認"], id="parts-not-yet-children"),
        pytest.param(["告知文の作成", "会場の予約"], "todo", None, [], id="one-part-left-of-a-split-node"),
        pytest.param(["告知文の作成", "会場の予約", "予算の確認"], "todo", None, [], id="all-parts-are-children"),
        pytest.param([], "done", None, [], id="done"),
        pytest.param([], "done", "分解して", ["告知文の作成", "会場の予約", "予算の確認"], id="done-but-asked"),
    ],
)
def test_the_engine_splits_a_node_into_what_is_not_on_the_board_yet(
    children: list[str], status: str, intent: str | None, proposed: list[str]
) -> None:
    """Children already on the board (by `parentId`) are not proposed again, nor a done node split unasked."""
    nodes = [node("n1", LISTED, status)] + [
        msgspec.structs.replace(node(f"c{i}", title), parent_id="n1") for i, title in enumerate(children)
    ]
    report = organizer_report(Board.of(nodes), focus_id="n1", intent=intent)
    split = report["decomposition_proposals"]
    titles = [c["title"] for c in split[0]["suggested_children"]] if split else []
    assert titles == proposed
    relations = {(r["from_node_id"], r["to_node_id"]) for r in report["relation_proposals"]}
    assert not {("n1", f"c{i}") for i in range(len(children))} & relations  # a parent and child are related already


def test_statuses_that_differ_in_case_or_spacing_are_one_group() -> None:
    nodes = [node("n1", "a", "Todo"), node("n2", "b", "todo"), node("n3", "c", "TODO "), node("n4", "d", "done")]
    nodes.append(node("n5", "e", "done"))
    report = organizer_report(Board.of(nodes), focus_id=None, intent=None)
    groups = {g["group_label"]: g["node_ids"] for g in report["grouping_proposals"]}
    assert groups == {"Todoのノード": ["n1", "n2", "n3"], "doneのノード": ["n4", "n5"]}
    assert "（Todo 3件、done 2件）" in report["summary"]


@pytest.mark.parametrize(("children", "phased"), [(0, True), (1, True), (2, False)])
def test_phases_go_to_a_node_the_board_does_not_split_yet(children: int, phased: bool) -> None:
    """One child is no split (a decomposition has two parts or more): the phases are still proposed beside it."""
    nodes = [node("n1", "会場の予約")]
    nodes += [msgspec.structs.replace(node(f"c{i}", f"下見 {i}"), parent_id="n1") for i in range(children)]
    split = organizer_report(Board.of(nodes), focus_id="n1", intent=None)["decomposition_proposals"]
    assert bool(split) is phased
