"""The embedded engine's Advisor: two or three options for one node, built from its status, never a pick.

The target is the focus node, else the node the user's intent names, else the first node that is
not done. The options depend on what kind of status it has (done / not started / in progress or
on hold), each with the four required items and at least one risk, and a suggested status only
when the board already uses a word for it. With no nodes at all (sample A4) the options are about
how to start, and `target_node_id` is empty: there is no node to point at.
"""

from __future__ import annotations

from typing import Any

import msgspec

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


def _options(board: Board, title: str, category: StatusCategory) -> list[AdvisorOption]:
    if category == "done":
        return [
            AdvisorOption(
                label="案A: 完了として確定する",
                description="いまの成果で区切りとし、完了のまま確定させる進め方です。",
                pros=["ほかの作業に時間を回せる"],
                cons=["見落としがあった場合、あとから戻る手間がかかる"],
                next_action=f"「{title}」の完了の条件を見直し、満たしていれば完了として確定する",
                necessary_info="完了の条件と、それを満たしていることが分かる成果物",
                criteria_note="完了の条件をすべて満たしていると言えるかどうか",
                risks=["残っていた作業に気づかないまま次へ進んでしまう"],
                **_status_word(board, "done"),
            ),
            AdvisorOption(
                label="案B: 見直してから再開する",
                description="完了扱いをいったん外し、足りない部分を補ってから改めて閉じる進め方です。",
                pros=["品質の不安を残さずに済む"],
                cons=["ほかの作業が後ろにずれる"],
                next_action=f"「{title}」で気になる点を書き出し、作業を再開するかどうかを確かめる",
                necessary_info="気になっている点の一覧と、それぞれの影響の大きさ",
                criteria_note="気になる点が、完了の判断を変えるほど大きいかどうか",
                risks=["見直しが長引き、ほかの作業の期限に響く"],
                **_status_word(board, "doing"),
            ),
        ]
    start = "すぐに着手する" if category == "todo" else "このまま進める"
    return [
        AdvisorOption(
            label=f"案A: {start}",
            description="いまの計画のまま、手を動かしながら進める進め方です。",
            pros=["早く成果が見える"],
            cons=["途中で計画の見直しが入ると手戻りになる"],
            next_action=f"「{title}」の次の作業を1つ決めて、その作業に取りかかる",
            necessary_info="次に取りかかる作業と、その完了の目安",
            criteria_note="次の作業がはっきりしていて、すぐに手を付けられるかどうか",
            risks=["全体の見通しがないまま進み、あとで手戻りが出る"],
            **_status_word(board, "doing"),
        ),
        AdvisorOption(
            label="案B: 分解してから進める",
            description="小さな作業に分け、一つずつ終わらせていく進め方です。",
            pros=["進み具合が見えやすくなる"],
            cons=["分ける作業そのものに時間がかかる"],
            next_action=f"「{title}」を2〜3個の小さな作業に分け、最初の1つを決める",
            necessary_info="完了までに含まれる作業の一覧",
            criteria_note="一度に終えるには大きすぎると感じるかどうか",
            risks=["分けすぎて管理の手間が増える"],
        ),
        AdvisorOption(
            label="案C: いったん保留して情報を集める",
            description="判断に足りない情報をそろえてから、進め方を決め直す進め方です。",
            pros=["判断の材料がそろった状態で決められる"],
            cons=["そのあいだ作業そのものは進まない"],
            next_action=f"「{title}」を決めるのに足りない情報を書き出し、誰に聞くかを決める",
            necessary_info="分かっていないことの一覧と、それを知っていそうな人や資料",
            criteria_note="分かっていないことが、進め方を大きく変えそうかどうか",
            risks=["保留が長引き、期限に間に合わなくなる"],
            **_status_word(board, "hold"),
        ),
    ]


def _first_steps(criteria: list[AdvisorCriterion]) -> AdvisorReport:
    """Sample A4: no nodes yet, so the options are about how to start and no node id is named."""
    return AdvisorReport(
        target_node_id="",
        target_title="",
        current_status="",
        options=[
            AdvisorOption(
                label="案A: 最初のノードを1件作る",
                description="いちばん気になっている作業を1件だけ登録して、そこから始める進め方です。",
                next_action="いま一番気になっている作業を1件、ノードとして登録する",
                necessary_info="その作業の名前と、だいたいの期限",
                criteria_note="すぐに手を付けたい作業がはっきりしているかどうか",
                risks=["作業の粒度が大きすぎると、あとで分解の手間が増える"],
            ),
            AdvisorOption(
                label="案B: やることを書き出してからまとめて登録する",
                description="思いつく作業を先に一覧にし、まとめてノードにする進め方です。",
                next_action="関係する作業を思いつくだけ書き出し、まとめてノードにする",
                necessary_info="関係する作業の一覧",
                criteria_note="作業が多く、先に全体像を見ておきたいかどうか",
                risks=["書き出しに時間がかかり、着手が遅れる"],
            ),
        ],
        criteria=criteria,
        next_decision="最初のノードをどの形で登録するかを決める",
        summary=(
            "ダッシュボードにノードがまだないため、特定のノードではなく、始め方の案を2つ並べました。"
            "まず登録したい作業が1件に絞れるかどうかを確かめるところから始められます。"
        ),
    )
