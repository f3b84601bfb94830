"""What a report says about a dashboard node that the dashboard says otherwise, and an Advisor run off its focus.

The validator's rules (seed 004 §3) check ids only, so a report whose ids are all on the board can still
give its target another node's title or another status (a model mixing two nodes up), and be rendered
as `## Advisor の選択肢: 告知` for the node titled 会場の予約. Each such difference is a warning naming
both sides, so the contradiction is shown next to `ok` rather than hidden behind it; a rewording is not a
difference (`_same_title`, `_same_status`). An Advisor run with `focusNodeId` gives options for that node:
a report on another node answers another question, an error the model is re-asked with.
"""

from __future__ import annotations

import re
from typing import Any

from contracts.proposal_quality import ReportKind
from graphs.proposal_quality.board import Board
from graphs.proposal_quality.drafting.wording import MAX_REPHRASES, neutral, status_category, visible

_WHITESPACE = re.compile(r"\s+")
_ELLIPSIS = "..."
"""How `_key` reads the `…` a quote is cut with (NFKC)."""
_REPHRASED_AWAY = 4 * MAX_REPHRASES
"""Characters rephrasing can take out of a quote at most: してください → する, four each time."""
_UNBOUNDED = 1_000_000
"""`neutral` without its length bound: only the rephrasing of forbidden words is wanted."""


def focus_problems(kind: ReportKind, report: object, focus_id: str | None, board: Board) -> list[str]:
    """An error when an Advisor report of a run with `focusNodeId` targets another node of the board.

    A target that is no node of the board is the validator's error already.
    """
    if kind != "advisor" or focus_id is None or not isinstance(report, dict):
        return []
    target = report.get("target_node_id")
    if target == focus_id or not isinstance(target, str) or board.get(target) is None:
        return []
    return [f"target_node_id must be the focus node {focus_id!r} (focusNodeId): the options are asked for that node"]


def board_disagreements(kind: ReportKind, report: object, board: Board) -> list[str]:
    """A warning for each title or status the report gives a node on `board` that the board does not."""
    if not isinstance(report, dict):
        return []
    if kind == "advisor":
        return _disagreements(report, "", board, status_key="current_status")
    proposals = report.get("decomposition_proposals")
    found: list[str] = []
    for index, proposal in enumerate(proposals if isinstance(proposals, list) else []):
        if isinstance(proposal, dict):
            found += _disagreements(proposal, f"decomposition_proposals[{index}].", board, status_key=None)
    return found


def _disagreements(item: dict[str, Any], path: str, board: Board, *, status_key: str | None) -> list[str]:
    target = item.get("target_node_id")
    node = board.get(target) if isinstance(target, str) else None
    if node is None:
        return []
    found = []
    title = item.get("target_title")
    if isinstance(title, str) and not _same_title(title, node.title):
        found.append(f"{path}target_title {title!r} is not the dashboard's title of {node.id!r} ({node.title!r})")
    status = item.get(status_key) if status_key else None
    if isinstance(status, str) and not _same_status(status, node.status_label):
        found.append(
            f"{path}{status_key} {status!r} is not the dashboard's status of {node.id!r} ({node.status_label!r})"
        )
    return found


def _same_title(said: str, title: str) -> bool:
    """Whether `said` is the title as written, as the engine quotes it (rephrased, cut with …), or nothing at all."""
    spoken, written = _key(said), _key(title)
    if not spoken or not written or spoken == written:
        return True
    quoted = _key(neutral(title, _UNBOUNDED))
    if not quoted or spoken == quoted:  # a title of forbidden words only quotes as nothing: the engine names the id
        return True
    cut = spoken.removesuffix(_ELLIPSIS)
    if not spoken.endswith(_ELLIPSIS) or not cut:
        return False
    return written.startswith(cut) or quoted.startswith(cut) or _quoted_cut(cut, title)


def _quoted_cut(cut: str, title: str) -> bool:
    """Whether `cut` is the start of `title` rephrased as the engine cuts it: cut first, then rephrased.

    The cut may split a forbidden phrase (`してくだ…`), which then stays as written, so no prefix of the whole
    title rephrased matches; rephrasing only shortens, so the start that was kept is at most `_REPHRASED_AWAY`
    characters longer than what it became.
    """
    flat = _WHITESPACE.sub(" ", visible(title)).strip()
    longest = min(len(flat), len(cut) + _REPHRASED_AWAY)
    return any(_key(neutral(flat[:kept], _UNBOUNDED)) == cut for kept in range(len(cut), longest + 1))


def _same_status(said: str, status: str) -> bool:
    """Whether `said` names the board's status: the same words, or the same kind (未着手 for todo), or nothing."""
    if not _key(said) or not _key(status) or _same_title(said, status):
        return True
    kind = status_category(said)
    return kind != "other" and kind == status_category(status)


def _key(text: str) -> str:
    """What is compared: the visible text in NFKC, case-folded, without whitespace (`会場の 予約` is `会場の予約`)."""
    return _WHITESPACE.sub("", visible(text)).casefold()
