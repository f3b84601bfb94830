"""What a report says about a dashboard node that the dashboard says otherwise, and an Advisor run off its focus.

The validator's rules (seed 004 §3) check ids only, so a report whose ids are all on the board can still
mix two nodes up: give its target another node's title (and be rendered as `## Advisor の選択肢: 告知` for
the node titled 会場の予約), or call a todo node done. Each such mix-up is a warning naming both sides, so
the contradiction is shown next to `ok` rather than hidden behind it. Only a plain contradiction counts: a
title that is another node's title and not the target's, a status of another kind (done for a todo node).
A title reworded, cut (by the engine, with `…`, or by the prompt), quoted in 「」 or made up is not read as
one: telling those from a mix-up would need the engine's rewording redone, which costs more than a request
may spend. An Advisor run with `focusNodeId` gives options for that node: a report on another node of the
board answers another question, an error the model is re-asked with.
"""

from __future__ import annotations

import re
from typing import Any

from contracts.proposal_quality import ReportKind
from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.drafting.wording import status_category, visible

_WHITESPACE = re.compile(r"\s+")
MAX_QUOTED_CHARS = 80
"""A title or status is quoted in a warning up to this many characters."""


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
    """A warning for each target the report gives another node's title, or a status of another kind."""
    if not isinstance(report, dict):
        return []
    titles = _Titles(board)
    if kind == "advisor":
        return _disagreements(report, "", board, titles, status_key="current_status")
    proposals = report.get("decomposition_proposals")
    found: list[str] = []
    for index, proposal in enumerate(proposals if isinstance(proposals, list) else []):
        if isinstance(proposal, dict):
            found += _disagreements(proposal, f"decomposition_proposals[{index}].", board, titles, status_key=None)
    return found


class _Titles:
    """The board's nodes by title as compared (`_key`).

    Built on the first question: a report with no target on the board asks none.
    """

    def __init__(self, board: Board) -> None:
        self._board = board
        self._by_key: dict[str, str] | None = None

    def owner(self, said: str) -> str | None:
        """The id of the first node whose title is `said` (compared by `_key`), or None."""
        if self._by_key is None:
            self._by_key = {}
            for node in self._board.nodes:
                self._by_key.setdefault(_key(node.title), node.id)
        return self._by_key.get(_key(said))


def _disagreements(
    item: dict[str, Any], path: str, board: Board, titles: _Titles, *, status_key: str | None
) -> list[str]:
    target = item.get("target_node_id")
    node = board.get(target) if isinstance(target, str) else None
    if node is None:
        return []
    found = []
    title = item.get("target_title")
    if isinstance(title, str) and _key(title) and _key(title) != _key(node.title):
        owner = titles.owner(title)
        if owner is not None and owner != node.id:
            found.append(
                f"{path}target_title {_quote(title)} is the title of node {owner!r}, not of {node.id!r} "
                f"({_quote(node.title)})"
            )
    status = item.get(status_key) if status_key else None
    if isinstance(status, str) and _other_kind(status, node):
        found.append(
            f"{path}{status_key} {_quote(status)} is not the dashboard's status of {node.id!r} "
            f"({_quote(node.status_label)})"
        )
    return found


def _other_kind(said: str, node: BoardNode) -> bool:
    """Whether `said` names another kind of status than the node's (done for todo); unknown words never do."""
    said_kind, own_kind = status_category(said), status_category(node.status_label)
    return "other" not in (said_kind, own_kind) and said_kind != own_kind


def _key(text: str) -> str:
    """What titles are compared by: the visible text in NFKC, case-folded, without whitespace."""
    return _WHITESPACE.sub("", visible(text)).casefold()


def _quote(text: str) -> str:
    shown = text if len(text) <= MAX_QUOTED_CHARS else text[: MAX_QUOTED_CHARS - 1] + "…"
    return repr(shown)
