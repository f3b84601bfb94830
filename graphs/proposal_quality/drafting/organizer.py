"""The embedded engine's Organizer: a deterministic, grounded OrganizerReport built from the dashboard alone.

What it proposes, all from the dashboard's own data:
- decomposition of the focus node (or, when the user asks for a decomposition, of the node the
  request is about) into children: the parts its title lists that are not its children yet, else three
  standard phases (none for a node the board already splits, or a done one the user did not ask about);
- grouping by status, when the board mixes statuses, and by a title term several nodes share;
- a relation between the two nodes of a title term exactly two nodes share, unless one is the other's parent.
Every id it writes comes from the board, every quoted text goes through `neutral`, and the summary
names the first step (まず…), so the report passes the same validator as a model's.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

import msgspec

from contracts.proposal_quality import (
    OrganizerDecompositionProposal,
    OrganizerGroupingProposal,
    OrganizerRelationProposal,
    OrganizerReport,
    OrganizerReportChild,
)
from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.drafting.wording import neutral, status_category
from graphs.text.normalize import normalize
from graphs.text.tokenize import term_postings, terms, terms_of_many

MAX_TERM_GROUPS = 3
MAX_RELATIONS = 5
MAX_CHILDREN = 6
MAX_STATUSES_IN_SUMMARY = 6

DECOMPOSE_WORDS = ("分解", "分け", "細か", "小さく", "サブタスク", "ブレーク", "breakdown", "split", "decompose")
"""Words in the user's intent that ask for a decomposition (sample O4)."""
_TITLE_PARTS = re.compile(r"[、,，・/／&＆+＋]|および|及び|\sand\s")
_PHASES = (
    ("現状と目的の整理", "何が済んでいて何が残っているか、完了の条件は何かを書き出す部分です。"),
    ("作業の洗い出し", "完了までの具体的な作業を並べ、順番と担当を決める部分です。"),
    ("結果の確認", "できあがったものを完了の条件と照らし合わせる部分です。"),
)


def organizer_report(board: Board, *, focus_id: str | None, intent: str | None) -> dict[str, Any]:
    """The Organizer report for `board`, as the JSON a model would return (validated like one)."""
    decompositions = _decompositions(board, focus_id, intent)
    by_term = _nodes_by_term(board)
    statuses = _statuses(board)
    groupings = _status_groups(statuses)
    groupings += _term_groups(len(board.nodes), by_term, taken=[set(g.node_ids) for g in groupings])
    relations = _term_relations(board, by_term)
    report = OrganizerReport(
        decomposition_proposals=decompositions,
        grouping_proposals=groupings,
        relation_proposals=relations,
        summary=_summary(board, statuses, decompositions, groupings, relations),
    )
    built: dict[str, Any] = msgspec.to_builtins(report)
    return built


def asks_for_decomposition(intent: str | None) -> bool:
    """Whether the user's intent asks to break a node down."""
    text = (intent or "").casefold()
    return any(word in text for word in DECOMPOSE_WORDS)


def _title(node: BoardNode, limit: int = 40) -> str:
    return neutral(node.title, limit) or neutral(node.id, limit) or "無題のノード"


def _target(board: Board, focus_id: str | None, intent: str | None) -> BoardNode | None:
    focus = board.get(focus_id)
    if focus is not None:
        return focus
    if not asks_for_decomposition(intent) or not board.nodes:
        return None
    wanted = set(terms(intent or ""))
    titles = terms_of_many([node.title for node in board.nodes])
    pairs = enumerate(zip(board.nodes, titles, strict=True))
    scored = [(len(wanted.intersection(found)), -i, node) for i, (node, found) in pairs]
    best = max(scored, key=lambda item: (item[0], item[1]))
    if best[0] > 0:
        return best[2]
    return next((n for n in board.nodes if status_category(n.status_label) != "done"), board.nodes[0])


def _status_of(board: Board, category: str) -> str | None:
    """The board's own word for a kind of status (e.g. its "todo"), so suggestions use its vocabulary."""
    return next((n.status_label for n in board.nodes if status_category(n.status_label) == category), None)


def _decompositions(board: Board, focus_id: str | None, intent: str | None) -> list[OrganizerDecompositionProposal]:
    """The target split into the parts its title lists that are not its children yet, else into phases.

    A part that is a child of the target already (by `parentId`) is not proposed again, and a node the board
    splits already (two children or more) gets no phases either; a done node is split only when the user asks.
    """
    target = _target(board, focus_id, intent)
    if target is None:
        return []
    if status_category(target.status_label) == "done" and not asks_for_decomposition(intent):
        return []
    title = _title(target)
    existing = board.children_of(target.id)
    already = {normalize(neutral(child.title, 40)) for child in existing}
    parts = [neutral(p, 40) for p in _TITLE_PARTS.split(target.title)]
    parts = list(dict.fromkeys(p for p in parts if len(p) >= 2 and normalize(p) not in already))[:MAX_CHILDREN]
    if len(parts) < 2 and len(existing) >= 2:  # split already: no phases beside the parts it has
        return []
    todo = _status_of(board, "todo")
    status = {} if todo is None else {"suggested_status": neutral(todo, 40)}
    if len(parts) >= 2:
        children = [
            OrganizerReportChild(title=part, context=f"「{title}」のうち「{part}」にあたる部分です。", **status)
            for part in parts
        ]
    else:
        children = [
            OrganizerReportChild(title=f"{title}：{phase}", context=context, **status) for phase, context in _PHASES
        ]
    requested = "ご依頼に沿って分解しました。" if asks_for_decomposition(intent) else ""
    reason = (
        f"{requested}「{title}」は一つのノードのままだと、どこから手を付けるかが見えにくいため、"
        f"{len(children)}つに分けると着手点がはっきりします。"
    )
    return [
        OrganizerDecompositionProposal(
            target_node_id=target.id, target_title=title, reason=reason, suggested_children=children
        )
    ]


@lru_cache(maxsize=1024)
def _status_key(label: str) -> str:
    """What a status is compared by (`Todo`, `todo` and `TODO ` are one); cached, as a board repeats a few statuses."""
    return normalize(label)


Statuses = dict[str, tuple[str, list[str]]]
"""The board's statuses in order of first use: compared form → (as its first node writes it, the ids of its nodes)."""


def _statuses(board: Board) -> Statuses:
    """The nodes by status (`_status_key`), read once for the groups and the summary."""
    found: Statuses = {}
    for node in board.nodes:
        label = node.status_label
        key = _status_key(label)
        if key in found:
            found[key][1].append(node.id)
        else:
            found[key] = (label, [node.id])
    return found


def _status_groups(statuses: Statuses) -> list[OrganizerGroupingProposal]:
    """A group per status two or more nodes share, when the board has several, labelled as its first node writes it."""
    if len(statuses) < 2:
        return []
    groups = []
    for written, ids in statuses.values():
        if len(ids) < 2:
            continue
        label = neutral(written, 30) or "ステータス未設定"
        groups.append(
            OrganizerGroupingProposal(
                group_label=f"{label}のノード",
                reason=f"ステータスが「{label}」のノードが{len(ids)}件あります。"
                "ひとまとまりにすると、同じ段階の作業を見比べやすくなります。",
                node_ids=ids,
            )
        )
    return groups


def _nodes_by_term(board: Board) -> dict[str, list[str]]:
    """Title terms of two or more characters → the ids of the nodes whose titles have them.

    Built by `term_postings` (the board's ids are distinct): every title of the board is read, and
    collecting the terms title by title first cost more than finding them.
    """
    postings = term_postings([node.title for node in board.nodes], [node.id for node in board.nodes])
    return {term: ids for term, ids in postings.items() if len(term) >= 2}


def _term_groups(total: int, by_term: dict[str, list[str]], taken: list[set[str]]) -> list[OrganizerGroupingProposal]:
    counts = Counter({term: len(ids) for term, ids in by_term.items() if 3 <= len(ids) < total})
    groups: list[OrganizerGroupingProposal] = []
    for term, count in counts.most_common():
        ids = by_term[term]
        if len(groups) >= MAX_TERM_GROUPS:
            break
        if set(ids) in taken:
            continue
        taken.append(set(ids))
        label = neutral(term, 20)
        groups.append(
            OrganizerGroupingProposal(
                group_label=f"「{label}」関連",
                reason=f"タイトルに「{label}」を含むノードが{count}件あります。"
                "まとめておくと、関連する作業を一度に見渡せます。",
                node_ids=ids,
            )
        )
    return groups


def _term_relations(board: Board, by_term: dict[str, list[str]]) -> list[OrganizerRelationProposal]:
    relations: list[OrganizerRelationProposal] = []
    seen: set[tuple[str, str]] = set()
    for term, ids in by_term.items():
        if len(ids) != 2 or (ids[0], ids[1]) in seen:
            continue
        seen.add((ids[0], ids[1]))
        first, second = board.by_id[ids[0]], board.by_id[ids[1]]
        if first.parent_id == second.id or second.parent_id == first.id:
            continue  # a parent and its child are related on the board already
        relations.append(
            OrganizerRelationProposal(
                from_node_id=first.id,
                to_node_id=second.id,
                relation_type="関連",
                reason=f"「{_title(first)}」と「{_title(second)}」はどちらも「{neutral(term, 20)}」を扱っています。"
                "つながりを記録しておくと、片方の変更がもう片方に影響するときに気づきやすくなります。",
            )
        )
        if len(relations) >= MAX_RELATIONS:
            break
    return relations


def _summary(
    board: Board,
    statuses: Statuses,
    decompositions: list[OrganizerDecompositionProposal],
    groupings: list[OrganizerGroupingProposal],
    relations: list[OrganizerRelationProposal],
) -> str:
    if not board.nodes:
        return (
            "ダッシュボードにノードがまだありません。まず最初のノードを1件追加すると、"
            "分解・グルーピング・関係づけの提案を出せるようになります。"
        )
    shown = [
        f"{neutral(written, 20) or '未設定'} {len(ids)}件"
        for written, ids in list(statuses.values())[:MAX_STATUSES_IN_SUMMARY]
    ]
    more = "ほか" if len(statuses) > MAX_STATUSES_IN_SUMMARY else ""
    overview = (
        f"ノードは{len(board.nodes)}件です（{'、'.join(shown)}{more}）。"
        f"分解の提案{len(decompositions)}件、グルーピングの提案{len(groupings)}件、"
        f"関係の提案{len(relations)}件をまとめました。"
    )
    if decompositions:
        step = f"まず「{decompositions[0].target_title}」の分解案を確認すると、次に手を付ける作業が決めやすくなります。"
    elif groupings:
        step = f"まず「{groupings[0].group_label}」のまとまりから見直すと、全体の進み具合がつかみやすくなります。"
    elif relations:
        step = "まず関係の提案を確認して、つながりを記録するかどうかを決められます。"
    else:
        step = (
            "今のところ目立った整理の提案はありません。"
            "まず各ノードのステータスが最新かどうかを確認するところから始められます。"
        )
    return overview + step
