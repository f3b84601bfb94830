"""The pieces around the validator: correction prompt, routing, board, grounding and rendering."""

from __future__ import annotations

import asyncio
import html
import re
import string
import typing
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langgraph.graph import END
from markdown_it import MarkdownIt

from contracts.proposal_quality import AdvisorReport, Dashboard, OrganizerReport, ProposalRunRequest, ValidationResult
from graphs.errors import MAX_DETAILS, InvalidInput
from graphs.proposal_quality.board import (
    MAX_BOARD_NODES,
    Board,
    BoardNode,
    _cycles,
    board_from_dashboard,
    check_board_size,
    check_dashboard,
    has_node,
)
from graphs.proposal_quality.graph import build_graph
from graphs.proposal_quality.grounding import ground_report
from graphs.proposal_quality.render import escape_markdown, render_advisor, render_organizer
from graphs.proposal_quality.routing import route_after_check
from graphs.proposal_quality.self_correction import build_correction_prompt, format_ids
from graphs.proposal_quality.state import Attempt, ProposalGraphState, ProposalRun
from tests.graphs.proposal_quality.samples import ADVISOR_SAMPLES, ORGANIZER_SAMPLES

# --- the correction prompt (seed 004 §4.1–4.2) ----------------------------------------------------


def test_correction_prompt_has_the_seed_wording_every_error_and_the_ids() -> None:
    errors = ["summary must be non-empty", "decomposition_proposals[0].suggested_children must have at least 2 items"]
    prompt = build_correction_prompt(errors, ["n1", "n2", "n3"])
    assert prompt == (
        "以下の Must 条件を満たしていません。これらをすべて満たす JSON だけを再度出力してください。\n"
        "\n"
        "【検証エラー】以下の項目を満たすように、同じ形式の JSON だけを再出力してください。\n"
        "- summary must be non-empty\n"
        "- decomposition_proposals[0].suggested_children must have at least 2 items\n"
        "- すべての node_id（target_node_id, from_node_id, to_node_id, node_ids）は、"
        "入力に存在する ID のみ使用してください。利用可能な ID: n1, n2, n3"
    )


def test_correction_prompt_without_ids_leaves_the_id_line_out() -> None:
    prompt = build_correction_prompt(["options must have at least 2 items"])
    assert prompt.endswith("- options must have at least 2 items")
    assert "利用可能な ID" not in prompt
    assert build_correction_prompt(["x"], []).endswith("利用可能な ID: (なし)")


def test_id_list_is_bounded() -> None:
    assert format_ids([f"n{i}" for i in range(5)], limit=3) == "n0, n1, n2（ほか 2 件）"


# --- routing (no model) ---------------------------------------------------------------------------


def _state(ok: bool, attempts: int, max_attempts: int, warnings: list[str] | None = None) -> ProposalGraphState:
    verdict = ValidationResult(ok=ok, errors=[] if ok else ["summary is required"], warnings=warnings or [])
    request = msgspec.convert({"dashboard": {"trays": {}}}, ProposalRunRequest)
    run = ProposalRun(kind="organizer", request=request, request_id="r", board=Board.of([]), max_attempts=max_attempts)
    attempt = Attempt(
        number=attempts, messages=[], reply_text="", report=None, parse_errors=[], verdict=verdict, log=[]
    )
    return {"run": run, "attempt": attempt}


@pytest.mark.parametrize(
    ("state", "route"),
    [
        (_state(True, 1, 3), "render"),
        (_state(True, 1, 3, warnings=["criteria should have at least 2 items"]), "render"),  # warnings alone
        (_state(False, 1, 3), "generate"),
        (_state(False, 2, 3), "generate"),
        (_state(False, 3, 3), "reject"),  # two re-asks used
        (_state(False, 1, 1), "reject"),  # embedded engine / max_corrections 0
        (_state(True, 3, 3), "render"),
    ],
)
def test_route_after_check(state: ProposalGraphState, route: str) -> None:
    assert asyncio.run(route_after_check(state)) == route


# --- the board --------------------------------------------------------------------------------------


def test_board_flattens_named_and_listed_trays() -> None:
    named = msgspec.convert({"trays": {"todo": [{"id": "a"}, {"id": "b", "status": "doing"}], "done": []}}, Dashboard)
    board = board_from_dashboard(named)
    assert board.ids == ["a", "b"]
    assert [n.status_label for n in board.nodes] == ["todo", "doing"]
    listed = msgspec.convert({"trays": [[{"id": "a", "title": "A"}], [{"id": "a"}, {"id": "c"}]]}, Dashboard)
    board = board_from_dashboard(listed)
    assert board.ids == ["a", "c"]  # a repeated id counts once (a request's dashboard never has one: below)
    assert board.title_of("a") == "A"
    assert board.title_of("c") == "c"
    assert board.nodes[1].tray == "トレイ2"


def test_board_size_is_capped_with_a_path() -> None:
    per_tray = MAX_BOARD_NODES // 4
    trays = {"trays": {f"t{t}": [{"id": f"n{t}-{i}"} for i in range(per_tray + (t == 0))] for t in range(4)}}
    with pytest.raises(InvalidInput) as caught:
        board_from_dashboard(msgspec.convert(trays, Dashboard))
    assert caught.value.details[0].path == "$.dashboard.trays"
    assert caught.value.status_code == 413


@pytest.mark.parametrize("listed", [False, True], ids=["named-trays", "listed-trays"])
def test_the_pre_graph_checks_agree_with_the_flattened_board(listed: bool) -> None:
    trays = {"todo": [{"id": "n1"}, {"id": "n2"}], "done": [{"id": "n2"}, {"id": "n3", "parentId": "n1"}]}
    dashboard = msgspec.convert({"trays": list(trays.values()) if listed else trays}, Dashboard)
    board = board_from_dashboard(dashboard)
    for node_id in ("n1", "n2", "n3", "n4", "N1", "n"):
        assert has_node(dashboard, node_id) is (board.get(node_id) is not None)
    check_board_size(dashboard)
    big = [[{"id": f"n{t}-{i}"} for i in range(MAX_BOARD_NODES // 4 + (t == 0))] for t in range(4)]
    with pytest.raises(InvalidInput) as caught:
        check_board_size(msgspec.convert({"trays": big}, Dashboard))
    assert caught.value.details[0].path == "$.dashboard.trays"


TWICE = "a node id is listed twice on the dashboard: "
PARENTS = "a parentId contradicts the dashboard: "


@pytest.mark.parametrize(
    ("trays", "problems", "what"),
    [
        pytest.param({"todo": [{"id": "a"}], "done": [{"id": "b"}]}, [], "", id="each-id-once"),
        pytest.param({"todo": [], "done": []}, [], "", id="no-nodes"),
        pytest.param(
            {"todo": [{"id": "a"}, {"id": "b"}], "done": [{"id": "b"}, {"id": "a"}, {"id": "a"}]},
            [
                ("done[0].id", "node id 'b' is already listed at $.dashboard.trays.todo[1].id"),
                ("done[1].id", "node id 'a' is already listed at $.dashboard.trays.todo[0].id"),
                ("done[2].id", "node id 'a' is already listed at $.dashboard.trays.todo[0].id"),
            ],
            TWICE + "3 problem(s): $.dashboard.trays.done[0].id: node id 'b'",
            id="every-later-listing",
        ),
        pytest.param(
            [[{"id": f"n{i}"} for i in range(30)], [{"id": f"n{i}"} for i in range(30)]],
            [(f"[1][{i}].id", f"node id 'n{i}' is already listed at") for i in range(MAX_DETAILS)],
            TWICE + "30 problem(s) (and 10 more): ",
            id="at-most-max-details",
        ),
        pytest.param(
            {"t": [{"id": "a"}, {"id": "b", "parentId": "a"}, {"id": "c", "parentId": None}]}, [], "", id="tree"
        ),
        pytest.param(
            {"t": [{"id": "a"}], "u": [{"id": "b", "parentId": "archived"}]}, [], "", id="parent-off-the-board"
        ),
        pytest.param({"t": [{"id": "a", "parentId": ""}]}, [], "", id="empty-parent"),
        pytest.param(
            {"t": [{"id": "a", "parentId": "a"}]},
            [("t[0].parentId", "node 'a' names itself as its parent")],
            PARENTS + "1 problem(s)",
            id="self",
        ),
        pytest.param(  # a child of a cycle (`c`) is not refused: its parent is on the board
            {"t": [{"id": "a", "parentId": "b"}, {"id": "c", "parentId": "a"}], "u": [{"id": "b", "parentId": "a"}]},
            [
                ("t[0].parentId", "node 'a' is its own ancestor: a → b → a"),
                ("u[0].parentId", "node 'b' is its own ancestor: b → a → b"),
            ],
            PARENTS + "2 problem(s)",
            id="two-cycle",
        ),
    ],
)
def test_check_dashboard_refuses_what_contradicts_the_board_at_its_path(
    trays: Any, problems: list[tuple[str, str]], what: str
) -> None:
    """An id listed twice, at each later listing; a parent on a cycle, at each member's parentId."""
    refused = refusal(trays)
    if not problems:
        assert refused is None
        return
    assert refused is not None
    assert refused.status_code == 422
    assert refused.message.startswith(what)
    prefix = "$.dashboard.trays" if isinstance(trays, list) else "$.dashboard.trays."
    assert [d.path for d in refused.details] == [prefix + at for at, _ in problems]
    assert all(d.message.startswith(m) for d, (_, m) in zip(refused.details, problems, strict=True))


def refusal(trays: Any) -> InvalidInput | None:
    """What `check_dashboard` refuses the dashboard of these trays with, or None when it passes."""
    try:
        check_dashboard(msgspec.convert({"trays": trays}, Dashboard))
    except InvalidInput as refused:
        return refused
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 11)), min_size=1, max_size=12))
def test_a_parent_is_refused_exactly_when_it_is_on_a_cycle(parents: list[int | None]) -> None:
    """Against a walk of at most n steps up from each node: it is on a cycle when the walk comes back to it."""
    size = len(parents)
    nodes = [{"id": f"n{i}", **({} if p is None else {"parentId": f"n{p}"})} for i, p in enumerate(parents)]

    def on_cycle(i: int) -> bool:
        current = parents[i]
        for _ in range(size):
            if current is None or current >= size:  # no parent, or one off the board
                return False
            if current == i:
                return True
            current = parents[current]
        return False

    expected = [f"$.dashboard.trays[0][{i}].parentId" for i in range(size) if on_cycle(i)]
    refused = refusal([nodes])
    assert ([] if refused is None else [d.path for d in refused.details]) == expected[:MAX_DETAILS]


class CountingDict(dict[str, str]):
    """A parent map that counts the lookups a cycle search makes."""

    lookups = 0

    def get(self, key: str, default: Any = None) -> Any:
        self.lookups += 1
        return super().get(key, default)


def test_the_cycle_search_walks_up_from_each_node_once() -> None:
    """A chain of 10,000 nodes is 10,000 lookups, not one walk to the root per node (50 million)."""
    size = 10_000
    chain = CountingDict({f"n{i}": f"n{i + 1}" for i in range(size - 1)})
    assert _cycles(chain) == {}
    assert chain.lookups <= size


def test_a_long_cycle_is_named_briefly_and_counted() -> None:
    """Each message names a few nodes of the cycle and its length; only the first `MAX_DETAILS` are built."""
    size = 3_000
    nodes = [{"id": f"node-{i:04d}", "parentId": f"node-{(i + 1) % size:04d}"} for i in range(size)]
    with pytest.raises(InvalidInput) as caught:
        check_dashboard(msgspec.convert({"trays": [nodes]}, Dashboard))
    assert len(caught.value.details) == MAX_DETAILS
    assert caught.value.message.startswith(f"a parentId contradicts the dashboard: {size} problem(s) (and 2980 more)")
    first = caught.value.details[0].message
    assert first == (
        "node 'node-0000' is its own ancestor: node-0000 → node-0001 → node-0002 → node-0003 → node-0004 → node-0005"
        " → … → node-0000 (a cycle of 3,000 nodes)"
    )
    assert max(len(d.message) for d in caught.value.details) < 200


# --- grounding of rejected reports ----------------------------------------------------------------


def test_unknown_ids_are_removed_from_a_rejected_organizer_report() -> None:
    report: dict[str, Any] = {
        "decomposition_proposals": [{"target_node_id": "ghost"}, {"target_node_id": "n1"}],
        "grouping_proposals": [{"node_ids": ["n1", "ghost2", 3]}, "junk"],
        "relation_proposals": [{"from_node_id": "n1", "to_node_id": "ghost3"}],
        "summary": "",
    }
    grounded, dropped = ground_report("organizer", report, frozenset({"n1"}))
    assert grounded == {
        "decomposition_proposals": [{"target_node_id": "n1"}],
        "grouping_proposals": [{"node_ids": ["n1"]}],
        "relation_proposals": [],
        "summary": "",
    }
    assert dropped == ["junk", "ghost", "ghost3", "3", "ghost2"]
    assert report["relation_proposals"]  # the input is not modified


@pytest.mark.parametrize(
    ("report", "kept", "dropped"),
    [
        pytest.param(
            {"decomposition_proposals": [{"target_node_id": ["n9"]}, {"target_node_id": "n1"}]},
            {"decomposition_proposals": [{"target_node_id": "n1"}]},
            ['["n9"]'],
            id="id-in-a-list",
        ),
        pytest.param(
            {"relation_proposals": [{"from_node_id": {"id": "n7"}, "to_node_id": "n1"}]},
            {"relation_proposals": []},
            ['{"id":"n7"}'],
            id="id-in-an-object",
        ),
        pytest.param(
            {"grouping_proposals": [{"node_ids": ["n1", ["n9"], {"id": "n8"}, 7]}]},
            {"grouping_proposals": [{"node_ids": ["n1"]}]},
            ['["n9"]', '{"id":"n8"}', "7"],
            id="ids-wrapped-in-node-ids",
        ),
        pytest.param(
            {"grouping_proposals": [{"node_ids": "n9"}]},
            {"grouping_proposals": [{"node_ids": []}]},
            ["n9"],
            id="node-ids-not-a-list",
        ),
        pytest.param(
            {"decomposition_proposals": ["n9", [{"target_node_id": "n1"}]]},
            {"decomposition_proposals": []},
            ["n9", '[{"target_node_id":"n1"}]'],
            id="proposals-not-objects",
        ),
        pytest.param(
            {"relation_proposals": {"from_node_id": "n9"}},
            {"relation_proposals": []},
            ['{"from_node_id":"n9"}'],
            id="proposals-not-a-list",
        ),
        pytest.param(
            {"decomposition_proposals": None}, {"decomposition_proposals": []}, ["null"], id="proposals-null"
        ),  # used to raise TypeError: a 500 for a model's reply
    ],
)
def test_a_rejected_report_keeps_no_id_in_another_shape(
    report: dict[str, Any], kept: dict[str, Any], dropped: list[str]
) -> None:
    """What is not a string where the schema has an id may carry one: it goes like an unknown id."""
    assert ground_report("organizer", report, frozenset({"n1"})) == (kept, dropped)


_IDS = st.sampled_from(["n1", "n2", "n9", ""])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _IDS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "node_ids", "x"]), inner, max_size=2)
    ),
    max_leaves=8,
)
_ID_SLOT = _JSON | _IDS


def _proposals(fields: list[str]) -> st.SearchStrategy[object]:
    item = st.fixed_dictionaries({}, optional=dict.fromkeys(fields, _ID_SLOT)) | _JSON
    return st.lists(item, max_size=3) | _JSON


@settings(max_examples=500, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "decomposition_proposals": _proposals(["target_node_id"]),
            "grouping_proposals": _proposals(["node_ids"]),
            "relation_proposals": _proposals(["from_node_id", "to_node_id"]),
        },
    )
)
def test_every_id_a_rejected_organizer_report_keeps_is_on_the_dashboard(report: dict[str, Any]) -> None:
    """Whatever shape the model gave it, every id position of the grounded report holds a dashboard id or nothing."""
    valid = frozenset({"n1", "n2"})
    grounded, _ = ground_report("organizer", report, valid)
    assert grounded is not None
    for key, fields in [
        ("decomposition_proposals", ["target_node_id"]),
        ("relation_proposals", ["from_node_id", "to_node_id"]),
    ]:
        for item in grounded.get(key, []):
            assert all(item.get(f) is None or item[f] in valid for f in fields), item
    for group in grounded.get("grouping_proposals", []):
        node_ids = group.get("node_ids")
        assert node_ids is None or all(isinstance(i, str) and i in valid for i in node_ids), group


@pytest.mark.parametrize("target", [["n9"], {"id": "n9"}, 9, "n9"])
def test_an_advisor_target_that_is_no_dashboard_id_becomes_empty(target: object) -> None:
    grounded, dropped = ground_report("advisor", {"target_node_id": target, "options": []}, frozenset({"n1"}))
    assert grounded == {"target_node_id": "", "options": []}
    assert len(dropped) == 1


def test_unknown_advisor_target_becomes_empty() -> None:
    grounded, dropped = ground_report("advisor", {"target_node_id": "ghost", "options": []}, frozenset({"n1"}))
    assert grounded == {"target_node_id": "", "options": []}
    assert dropped == ["ghost"]
    assert ground_report("advisor", ["not", "an", "object"], frozenset()) == (None, [])


# --- rendering --------------------------------------------------------------------------------------


def test_organizer_render_has_sections_titles_and_markdown() -> None:
    sample = next(s for s in ORGANIZER_SAMPLES if s.id == "O5")
    board = Board.of([BoardNode(id=n["id"], title=n["title"], status=n["status"], tray="") for n in sample.nodes])
    rendered = render_organizer(msgspec.convert(sample.report, OrganizerReport), board)
    assert [s.key for s in rendered.sections] == ["decomposition_proposals", "grouping_proposals", "relation_proposals"]
    assert rendered.sections[0].items == []
    relation = rendered.sections[2].items[0]
    assert relation.heading == "予算の確認（n5） → 会場の予約（n6）（前提）"
    assert relation.node_ids == ["n5", "n6"]
    assert rendered.markdown.startswith("## Organizer の整理提案\n")
    assert "### 分解の提案\n\n（提案なし）" in rendered.markdown
    assert "- **イベント準備**" in rendered.markdown


def test_advisor_render_lists_the_four_items_of_every_option() -> None:
    sample = next(s for s in ADVISOR_SAMPLES if s.id == "A3")
    rendered = render_advisor(msgspec.convert(sample.report, AdvisorReport), Board.of([]))
    options = rendered.sections[0]
    assert [i.heading for i in options.items] == ["候補A: 今週中にレビューする", "候補B: 検討の完了を待つ"]
    lines = options.items[0].lines
    assert lines[:4] == [
        "次の一手: 次の作業を1つ決める",
        "必要な情報: 残っている作業の一覧",
        "判断のめやす: 期限に間に合うかどうか",
        "リスク: 手戻りが出るかもしれない",
    ]
    assert "良い点: 早く次に進める" in lines
    assert rendered.title == "Advisor の選択肢: 画面デザインのレビュー"
    assert [s.key for s in rendered.sections] == ["options", "criteria", "next_decision"]
    assert "現在のステータス: todo" in rendered.markdown


def test_organizer_group_lines_name_every_node_by_title_or_id() -> None:
    board = Board.of(
        [
            BoardNode(id="n1", title=" 会場の予約 ", status="todo", tray=""),
            BoardNode(id="n2", title="  ", status="todo", tray=""),
        ]
    )
    group = {"group_label": "準備", "reason": "同じ段階です。", "node_ids": ["n1", "n2", "n9"]}
    raw = {"decomposition_proposals": [], "grouping_proposals": [group], "relation_proposals": [], "summary": "まず"}
    report = msgspec.convert(raw, OrganizerReport)
    lines = render_organizer(report, board).sections[1].items[0].lines
    # A title is trimmed, a blank one falls back to the id, an id not on the board is shown as it is.
    assert lines[1] == "対象: 会場の予約（n1）、n2（n2）、n9（n9）"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  会場の予約（n1）、予算の確認（n2） ", "会場の予約（n1）、予算の確認（n2）"),
        ("一行目\r\n  二行目", "一行目 二行目"),
        ("a_b", r"a\_b"),
        ("末尾に記号!", r"末尾に記号\!"),
        ("", ""),
    ],
)
def test_markdown_escaping_of_lines_with_and_without_special_characters(text: str, expected: str) -> None:
    assert escape_markdown(text) == expected


def test_markdown_cannot_be_injected() -> None:
    assert escape_markdown("[click](http://x) <img src=x>\n# title *b*") == (
        r"\[click\]\(http://x\) \<img src=x\> \# title \*b\*"
    )
    report = ADVISOR_SAMPLES[0].fresh_report()
    report["summary"] = "![x](http://evil)\n## injected"
    rendered = render_advisor(msgspec.convert(report, AdvisorReport), Board.of([]))
    assert "![x]" not in rendered.markdown
    assert "\n## injected" not in rendered.markdown


_MARKDOWN_TEXT = st.text(alphabet=st.sampled_from([*string.punctuation, *" 1a\t\n\u3000会。"]), max_size=24)
"""Every ASCII punctuation character, whichever the renderer escapes, with digits, letters and white space."""


@settings(max_examples=1_000, deadline=None)
@given(_MARKDOWN_TEXT)
@example("1. まず確認")  # an ordered list
@example("10) 項目")
@example("&lt;b&gt; &copy; &#35;")  # character references
@example("[a](http://x) ![i](y) <b> `c` **d** # e > f - g")
def test_a_commonmark_renderer_shows_escaped_text_as_written(text: str) -> None:
    """markdown-it (CommonMark) is the judge: one paragraph holding exactly the line, no markup of the text's own."""
    line = re.sub(r"\s*[\r\n]+\s*", " ", text).strip()  # what escaping keeps: one line, its ends trimmed
    rendered = MarkdownIt("commonmark").render(escape_markdown(text))
    if not line:
        assert rendered == ""
        return
    assert rendered.startswith("<p>"), rendered
    assert rendered.endswith("</p>\n"), rendered
    inner = rendered.removeprefix("<p>").removesuffix("</p>\n")
    assert "<" not in inner, rendered
    assert html.unescape(inner) == line


def test_generate_routes_where_build_graph_says_it_can() -> None:
    """`generate` re-asks (itself) or ends the run: its declared destinations are its `Command`'s."""
    spec = build_graph().builder.nodes["generate"]
    (returned,) = typing.get_args(typing.get_type_hints(spec.runnable.afunc)["return"])
    assert set(spec.ends) == set(typing.get_args(returned)) == {"generate", END}
