"""The embedded engine's Advisor: two or three options for one node, built from its status, never a pick.

The target is the focus node, else the node the user's intent names, else the first node that is
not done. The options depend on what kind of status it has (done / not started / in progress or
on hold), each with the four required items and at least one risk, and a suggested status only
when the board already uses a word for it. With no nodes at all (sample A4) the options are about
how to start, and `target_node_id` is empty: there is no node to point at.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import msgspec
import yaml

from contracts.proposal_quality import AdvisorCriterion, AdvisorOption, AdvisorReport
from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.wording import StatusCategory, neutral, status_category
from graphs.text.tokenize import terms


def advisor_report(board: Board, *, focus_id: str | None, intent: str | None, notes: list[str]) -> dict[str, Any]:
    """The Advisor report for `board`, as the JSON a model would return (validated like one)."""
    target = _target(board, focus_id, intent)
    criteria = _criteria(intent, notes)
    if target is None:
        report = _first_steps(criteria)
    else:
        title = neutral(target.title) or neutral(target.id) or "無題のノード"
        status = neutral(target.status_label, 30)
        options = _options(board, title, status_category(target.status_label))
        considered = f"ご意向「{neutral(intent, 60)}」も判断材料に含めています。" if intent and intent.strip() else ""
        report = AdvisorReport(
            target_node_id=target.id,
            target_title=title,
            current_status=status,
            options=options,
            criteria=criteria,
            next_decision=f"「{title}」をどの案で進めるかを決める",
            summary=(
                f"「{title}」（現在のステータス: {status or '未設定'}）について、進め方の案を{len(options)}つ"
                f"並べました。どれを選ぶかは判断基準に照らして決められます。{considered}"
                "まず各案の「必要な情報」がそろっているかを確認するところから始められます。"
            ),
        )
    built: dict[str, Any] = msgspec.to_builtins(report)
    return built


def _target(board: Board, focus_id: str | None, intent: str | None) -> BoardNode | None:
    focus = board.get(focus_id)
    if focus is not None or not board.nodes:
        return focus
    wanted = set(terms(intent or ""))
    if wanted:
        overlap = [(len(wanted & set(terms(node.title))), -i) for i, node in enumerate(board.nodes)]
        best, negative_index = max(overlap)
        if best > 0:
            return board.nodes[-negative_index]
    return next((n for n in board.nodes if status_category(n.status_label) != "done"), board.nodes[0])


def _status_word(board: Board, category: StatusCategory) -> dict[str, str]:
    """`{"suggested_status": <the board's word for category>}`, or nothing when the board has none."""
    word = next((n.status_label for n in board.nodes if status_category(n.status_label) == category), None)
    return {} if word is None else {"suggested_status": neutral(word, 40)}


def _criteria(intent: str | None, notes: list[str]) -> list[AdvisorCriterion]:
    criteria = [
        AdvisorCriterion(name="期限", description="いつまでに終えたいか、その期限に間に合う見通しがあるか"),
        AdvisorCriterion(name="作業量", description="完了までに残っている作業の量と、使える時間や人手"),
        AdvisorCriterion(name="不確実性", description="まだ分かっていないことが、結果をどれだけ左右しそうか"),
    ]
    if intent and intent.strip():
        criteria.append(
            AdvisorCriterion(name="ご意向との合致", description=f"「{neutral(intent, 60)}」にどれだけ沿うか")
        )
    criteria += [
        AdvisorCriterion(name="制約", description=f"「{neutral(note, 60)}」を満たせるか")
        for note in notes[:5]
        if note.strip()
    ]
    return criteria


@lru_cache(maxsize=1)
def _canned_options() -> dict[str, list[dict[str, Any]]]:
    """The option texts (graphs/proposal_quality/advisor_options.yaml), loaded once."""
    text = resources.files(__package__).joinpath("advisor_options.yaml").read_text(encoding="utf-8")
    loaded: dict[str, list[dict[str, Any]]] = yaml.safe_load(text)
    return loaded


def _build_options(board: Board | None, key: str, title: str) -> list[AdvisorOption]:
    options = []
    for template in _canned_options()[key]:
        fields = {k: v for k, v in template.items() if k != "status"}
        fields = {k: v.format(title=title) if isinstance(v, str) else v for k, v in fields.items()}
        status = template.get("status")
        suggested = _status_word(board, status) if board is not None and status else {}
        options.append(msgspec.convert({**fields, **suggested}, AdvisorOption))
    return options


def _options(board: Board, title: str, category: StatusCategory) -> list[AdvisorOption]:
    key = category if category in ("done", "todo") else "doing"
    return _build_options(board, key, title)


def _first_steps(criteria: list[AdvisorCriterion]) -> AdvisorReport:
    """Sample A4: no nodes yet, so the options are about how to start and no node id is named."""
    return AdvisorReport(
        target_node_id="",
        target_title="",
        current_status="",
        options=_build_options(None, "first_steps", ""),
        criteria=criteria,
        next_decision="最初のノードをどの形で登録するかを決める",
        summary=(
            "ダッシュボードにノードがまだないため、特定のノードではなく、始め方の案を2つ並べました。"
            "まず登録したい作業が1件に絞れるかどうかを確かめるところから始められます。"
        ),
    )
