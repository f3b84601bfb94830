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
from graphs.proposal_quality.drafting.wording import neutral, status_category, visible
from graphs.proposal_quality.validator import quote

_WHITESPACE = re.compile(r"\s+")
ENGINE_QUOTED_CHARS = 40
"""How much of a title the embedded engine quotes as a target's title (`drafting`'s `_title`)."""


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
    """The board's titles as compared (`_key`) and as the engine quotes them, each worked out once; the nodes by title.

    The index of every title is built on the first question only: a report whose targets are named as the
    board or the engine names them asks none.
    """

    def __init__(self, board: Board) -> None:
        self._board = board
        self._keys: dict[str, str] = {}
        self._quotes: dict[str, str] = {}
        self._by_key: dict[str, str] | None = None

    def key(self, node: BoardNode) -> str:
        """The node's title as compared."""
        found = self._keys.get(node.id)
        if found is None:
            found = self._keys[node.id] = _key(node.title)
        return found

    def quoted(self, node: BoardNode) -> str:
        """The node's title as the embedded engine quotes it, as compared (`_names_its_own`)."""
        found = self._quotes.get(node.id)
        if found is None:
            found = self._quotes[node.id] = _key(neutral(node.title, ENGINE_QUOTED_CHARS))
        return found

    def owner(self, said: str) -> str | None:
        """The id of the first node whose title is `said` (compared by `_key`), or None."""
        if self._by_key is None:
            self._by_key = {}
            for node in self._board.nodes:
                self._by_key.setdefault(self.key(node), node.id)
        return self._by_key.get(_key(said))


def _names_its_own(said: str, node: BoardNode, titles: _Titles) -> bool:
    """Whether `said` is the node's title as written, or as the embedded engine quotes it.

    The engine cuts a title to `ENGINE_QUOTED_CHARS` and rephrases forbidden words (`確認してください` →
    `確認する`), which may give another node's title.
    """
    spoken = _key(said)
    return not spoken or spoken == titles.key(node) or spoken == titles.quoted(node)


def _disagreements(
    item: dict[str, Any], path: str, board: Board, titles: _Titles, *, status_key: str | None
) -> list[str]:
    target = item.get("target_node_id")
    node = board.get(target) if isinstance(target, str) else None
    if node is None:
        return []
    found = []
    title = item.get("target_title")
    if isinstance(title, str) and not _names_its_own(title, node, titles):
        owner = titles.owner(title)
        if owner is not None and owner != node.id:
            found.append(
                f"{path}target_title {quote(title)} is the title of node {owner!r}, not of {node.id!r} "
                f"({quote(node.title)})"
            )
    status = item.get(status_key) if status_key else None
    if isinstance(status, str) and _other_kind(status, node):
        found.append(
            f"{path}{status_key} {quote(status)} is not the dashboard's status of {node.id!r} "
            f"({quote(node.status_label)})"
        )
    return found


def _other_kind(said: str, node: BoardNode) -> bool:
    """Whether `said` names another kind of status than the node's (done for todo); unknown words never do."""
    said_kind, own_kind = status_category(said), status_category(node.status_label)
    return "other" not in (said_kind, own_kind) and said_kind != own_kind


def _key(text: str) -> str:
    """What titles are compared by: the visible text in NFKC, case-folded, without whitespace."""
    return _WHITESPACE.sub("", visible(text)).casefold()
