"""Render a report that passed the validator for the UI: structured sections plus the same as Markdown.

Seed 004 §1: rendering happens only when `errors` is empty, so these functions take the typed
report (the validator guarantees it converts). Node ids are shown with their dashboard titles. Text
from the report is model or user output: the Markdown escapes it, so a CommonMark renderer shows it as
written, with no link, image, HTML, list or character reference of its own (a test renders it with
markdown-it). A renderer that links bare URLs itself (GFM's autolink extension) still does so.
"""

from __future__ import annotations

import re

from contracts.proposal_quality import (
    AdvisorOption,
    AdvisorReport,
    OrganizerReport,
    Rendered,
    RenderedItem,
    RenderedSection,
)
from graphs.proposal_quality.board import Board

ORGANIZER_TITLE = "Organizer の整理提案"
ADVISOR_TITLE = "Advisor の選択肢"
NONE_YET = "（提案なし）"

MARKDOWN_SPECIAL = "\\`*_[]{}<>()#+-!|~.&"
"""Characters that mean something in Markdown; each is backslash-escaped in rendered text (`.` for `1. …`, which
starts an ordered list, `&` for `&lt;` or `&copy;`, which would show as another character than written)."""
_SPECIAL = re.compile(f"[{re.escape(MARKDOWN_SPECIAL)}]")
_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def escape_markdown(text: str) -> str:
    """`text` on one line with every Markdown-significant character backslash-escaped.

    A regex substitution, not `str.translate`: translating with a table looks every character of a
    Japanese line up in a dict, about seven times slower than the regex scan, and a report renders a
    few dozen lines, some listing every node of a group. Most lines hold no such character at all, and
    a substring test per character (a memchr-like scan each) says so about three times faster than the
    regex scan does: only a line with one is substituted.
    """
    one_line = (_LINE_BREAKS.sub(" ", text) if "\n" in text or "\r" in text else text).strip()
    if any(map(one_line.__contains__, MARKDOWN_SPECIAL)):
        return _SPECIAL.sub(r"\\\g<0>", one_line)
    return one_line


def _node(board: Board, node_id: str) -> str:
    """A node as a report line names it: its title (or id) and its id."""
    return _nodes(board, [node_id])


def _nodes(board: Board, node_ids: list[str]) -> str:
    """Each node as `_node` names it, joined by 、.

    One list comprehension with `board.title_of` inlined: a group may list every node of the board.
    """
    by_id = board.by_id
    return "、".join([f"{(node.title.strip() or node.id) if (node := by_id.get(i)) else i}（{i}）" for i in node_ids])


def render_organizer(report: OrganizerReport, board: Board) -> Rendered:
    """The display payload of an Organizer report: decomposition, grouping and relation sections."""
    decomposition = RenderedSection(
        key="decomposition_proposals",
        heading="分解の提案",
        items=[
            RenderedItem(
                heading=f"{_node(board, p.target_node_id)} を分解",
                lines=[
                    f"理由: {p.reason}",
                    *(
                        f"子: {c.title} — {c.context}"
                        + (f"（ステータス案: {c.suggested_status}）" if isinstance(c.suggested_status, str) else "")
                        for c in p.suggested_children
                    ),
                ],
                node_ids=[p.target_node_id],
            )
            for p in report.decomposition_proposals
        ],
    )
    grouping = RenderedSection(
        key="grouping_proposals",
        heading="グルーピングの提案",
        items=[
            RenderedItem(
                heading=g.group_label,
                lines=[f"理由: {g.reason}", "対象: " + _nodes(board, g.node_ids)],
                node_ids=list(g.node_ids),
            )
            for g in report.grouping_proposals
        ],
    )
    relation = RenderedSection(
        key="relation_proposals",
        heading="関係の提案",
        items=[
            RenderedItem(
                heading=f"{_node(board, r.from_node_id)} → {_node(board, r.to_node_id)}（{r.relation_type}）",
                lines=[f"理由: {r.reason}"],
                node_ids=[r.from_node_id, r.to_node_id],
            )
            for r in report.relation_proposals
        ],
    )
    sections = [decomposition, grouping, relation]
    return Rendered(
        kind="organizer",
        title=ORGANIZER_TITLE,
        summary=report.summary,
        sections=sections,
        markdown=_markdown(ORGANIZER_TITLE, report.summary, sections),
    )


def _option_lines(option: AdvisorOption) -> list[str]:
    lines = [option.description] if isinstance(option.description, str) and option.description.strip() else []
    lines += [
        f"次の一手: {option.next_action}",
        f"必要な情報: {option.necessary_info}",
        f"判断のめやす: {option.criteria_note}",
        "リスク: " + " / ".join(option.risks),
    ]
    if isinstance(option.pros, list) and option.pros:
        lines.append("良い点: " + " / ".join(option.pros))
    if isinstance(option.cons, list) and option.cons:
        lines.append("気になる点: " + " / ".join(option.cons))
    if isinstance(option.suggested_status, str) and option.suggested_status.strip():
        lines.append(f"ステータス案: {option.suggested_status}")
    return lines


def render_advisor(report: AdvisorReport, board: Board) -> Rendered:
    """The display payload of an Advisor report: options, criteria and the decision to make next."""
    target = [report.target_node_id] if report.target_node_id else []
    title = f"{ADVISOR_TITLE}: {report.target_title}" if report.target_title.strip() else ADVISOR_TITLE
    criteria = report.criteria if isinstance(report.criteria, list) else []
    sections = [
        RenderedSection(
            key="options",
            heading="選択肢",
            items=[RenderedItem(heading=o.label, lines=_option_lines(o), node_ids=target) for o in report.options],
        ),
        RenderedSection(
            key="criteria",
            heading="判断基準",
            items=[RenderedItem(heading=c.name, lines=[c.description]) for c in criteria],
        ),
        RenderedSection(
            key="next_decision",
            heading="次に決めること",
            items=[RenderedItem(heading=report.next_decision, lines=[], node_ids=target)],
        ),
    ]
    status = f"現在のステータス: {report.current_status}" if report.current_status.strip() else ""
    summary = report.summary
    return Rendered(
        kind="advisor",
        title=title,
        summary=summary,
        sections=sections,
        markdown=_markdown(title, summary, sections, subtitle=status),
    )


def _markdown(title: str, summary: str, sections: list[RenderedSection], *, subtitle: str = "") -> str:
    out = [f"## {escape_markdown(title)}", ""]
    if subtitle:
        out += [escape_markdown(subtitle), ""]
    out += [escape_markdown(summary), ""]
    for section in sections:
        out += [f"### {escape_markdown(section.heading)}", ""]
        if not section.items:
            out += [NONE_YET, ""]
            continue
        for item in section.items:
            out.append(f"- **{escape_markdown(item.heading)}**")
            out += [f"  - {escape_markdown(line)}" for line in item.lines]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
