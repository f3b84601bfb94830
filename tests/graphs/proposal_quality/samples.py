"""The seed's ten sample cases (seed 004 §5): O1–O5 for the Organizer, A1–A5 for the Advisor.

Organizer inputs are node lists of 0 / 1 / 3 / 1 (with a decomposition request) / 2 nodes; A4 is the
Advisor's zero-node case, the one exception to "target_node_id must be an input id". Each case has
a report that meets every Must and Should rule; the broken variants are derived from these by the
mutations in `test_validator.py`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

Node = dict[str, str]


@dataclass(frozen=True)
class Sample:
    """One sample: its id, the dashboard nodes, an optional focus/intent, and a valid report."""

    id: str
    nodes: list[Node]
    report: dict[str, Any]
    focus: str | None = None
    intent: str | None = None

    @property
    def valid_ids(self) -> list[str]:
        return [n["id"] for n in self.nodes]

    def fresh_report(self) -> dict[str, Any]:
        return copy.deepcopy(self.report)

    def dashboard(self) -> dict[str, Any]:
        trays: dict[str, list[Node]] = {}
        for node in self.nodes:
            trays.setdefault(node["status"], []).append(node)
        return {"trays": trays}


PLAN = {"id": "n1", "title": "企画書の作成", "status": "todo"}
DESIGN = {"id": "n2", "title": "画面デザインの検討", "status": "doing"}
TEST = {"id": "n3", "title": "画面デザインのレビュー", "status": "todo"}
RELEASE = {"id": "n4", "title": "リリース準備、告知文の作成・当日の連絡体制", "status": "todo"}
BUDGET = {"id": "n5", "title": "予算の確認", "status": "done"}
VENUE = {"id": "n6", "title": "会場の予約", "status": "doing"}

ORGANIZER_SAMPLES = [
    Sample(
        id="O1",
        nodes=[],
        report={
            "decomposition_proposals": [],
            "grouping_proposals": [],
            "relation_proposals": [],
            "summary": "ノードがまだありません。まず最初のノードを1件追加すると、整理の提案ができるようになります。",
        },
    ),
    Sample(
        id="O2",
        nodes=[PLAN],
        report={
            "decomposition_proposals": [],
            "grouping_proposals": [
                {
                    "group_label": "企画まわり",
                    "reason": "企画に関わる作業をまとめておくと見渡しやすくなります。",
                    "node_ids": ["n1"],
                }
            ],
            "relation_proposals": [],
            "summary": "ノードは1件です。まず「企画書の作成」の完了条件を書き出すと次の一手が見えます。",
        },
    ),
    Sample(
        id="O3",
        nodes=[PLAN, DESIGN, TEST],
        report={
            "decomposition_proposals": [],
            "grouping_proposals": [
                {
                    "group_label": "画面デザイン関連",
                    "reason": "どちらも画面デザインを扱っているため、まとめると進み具合を比べやすくなります。",
                    "node_ids": ["n2", "n3"],
                }
            ],
            "relation_proposals": [
                {
                    "from_node_id": "n2",
                    "to_node_id": "n3",
                    "relation_type": "前後関係",
                    "reason": "検討が終わるとレビューに進めるため、順番を記録しておくと見通しが立ちます。",
                }
            ],
            "summary": (
                "3件のノードのうち2件が画面デザインに関わっています。"
                "まず画面デザインのまとまりを作ると全体が見えやすくなります。"
            ),
        },
    ),
    Sample(
        id="O4",
        nodes=[RELEASE],
        intent="このノードを分解したい",
        report={
            "decomposition_proposals": [
                {
                    "target_node_id": "n4",
                    "target_title": RELEASE["title"],
                    "reason": "三つの作業がひとつのノードに入っているため、分けると担当と期限を決めやすくなります。",
                    "suggested_children": [
                        {"title": "リリース準備", "context": "手順書と確認項目の用意", "suggested_status": "todo"},
                        {"title": "告知文の作成", "context": "社内外向けの告知文を書く"},
                        {"title": "当日の連絡体制", "context": "当日の連絡先と担当の一覧"},
                    ],
                }
            ],
            "grouping_proposals": [],
            "relation_proposals": [],
            "summary": "「リリース準備」には三つの作業が含まれています。まず分解案を確認すると着手点がはっきりします。",
        },
    ),
    Sample(
        id="O5",
        nodes=[BUDGET, VENUE],
        report={
            "decomposition_proposals": [],
            "grouping_proposals": [
                {
                    "group_label": "イベント準備",
                    "reason": "予算と会場はどちらもイベント準備の一部で、並べて見ると抜けに気づきやすくなります。",
                    "node_ids": ["n5", "n6"],
                }
            ],
            "relation_proposals": [
                {
                    "from_node_id": "n5",
                    "to_node_id": "n6",
                    "relation_type": "前提",
                    "reason": "会場の規模は予算で決まるため、つながりを記録すると判断の根拠が残ります。",
                }
            ],
            "summary": "予算の確認は済んでいます。まず会場の予約を予算と照らし合わせるところから進められます。",
        },
    ),
]


def _option(label: str, **extra: Any) -> dict[str, Any]:
    return {
        "label": label,
        "next_action": "次の作業を1つ決める",
        "necessary_info": "残っている作業の一覧",
        "criteria_note": "期限に間に合うかどうか",
        "risks": ["手戻りが出るかもしれない"],
        **extra,
    }


CRITERIA = [
    {"name": "期限", "description": "いつまでに終えたいか"},
    {"name": "作業量", "description": "残りの作業の量"},
]

ADVISOR_SAMPLES = [
    Sample(
        id="A1",
        nodes=[PLAN],
        report={
            "target_node_id": "n1",
            "target_title": PLAN["title"],
            "current_status": "todo",
            "options": [_option("案A: すぐに書き始める"), _option("案B: 構成を先に決める")],
            "criteria": CRITERIA,
            "next_decision": "どちらの案で書き始めるかを決める",
            "summary": "企画書の進め方を2つの案で並べました。",
        },
    ),
    Sample(
        id="A2",
        nodes=[PLAN, DESIGN],
        focus="n2",
        report={
            "target_node_id": "n2",
            "target_title": DESIGN["title"],
            "current_status": "doing",
            "options": [
                _option("パターン1: このまま検討を続ける", suggested_status="doing"),
                _option("パターン2: いったん保留する", suggested_status="hold"),
                _option("パターン3: 関係者に相談する"),
            ],
            "criteria": CRITERIA,
            "next_decision": "検討を続けるか保留するかを決める",
            "summary": "画面デザインの検討について3つのパターンを並べました。",
        },
    ),
    Sample(
        id="A3",
        nodes=[PLAN, DESIGN, TEST],
        focus="n3",
        report={
            "target_node_id": "n3",
            "target_title": TEST["title"],
            "current_status": "todo",
            "options": [
                _option("候補A: 今週中にレビューする", pros=["早く次に進める"], cons=["準備が足りないかもしれない"]),
                _option("候補B: 検討の完了を待つ", description="検討が終わってから始める"),
            ],
            "criteria": [*CRITERIA, {"name": "不確実性", "description": "分かっていないことの多さ"}],
            "next_decision": "レビューの開始時期を決める",
            "summary": "レビューの始め方について2つの候補を並べました。",
        },
    ),
    Sample(
        id="A4",
        nodes=[],
        report={
            "target_node_id": "",
            "target_title": "",
            "current_status": "",
            "options": [_option("案A: 最初のノードを作る"), _option("案B: やることを書き出す")],
            "criteria": CRITERIA,
            "next_decision": "最初に登録するノードを決める",
            "summary": "ノードがまだないため、始め方の案を2つ並べました。",
        },
    ),
    Sample(
        id="A5",
        nodes=[BUDGET, VENUE],
        focus="n5",
        intent="予算をもう一度見直すか迷っている",
        report={
            "target_node_id": "n5",
            "target_title": BUDGET["title"],
            "current_status": "done",
            "options": [
                _option("案A: 完了のまま確定する", description="いまの予算で進める", suggested_status="done"),
                _option("案B: 見直して再開する", description="見積もりを取り直す", suggested_status="doing"),
            ],
            "criteria": CRITERIA,
            "next_decision": "予算を確定するか見直すかを決める",
            "summary": "予算の扱いについて2つの案を並べました。",
        },
    ),
]
