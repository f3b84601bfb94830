"""The dashboard flattened into one node list: the valid node ids are taken from here, never from the client.

Seed 004 §7: `dashboard` is `GET /api/dashboard`'s `{trays}`, each tray an array of nodes, and the
server extracts `validNodeIds` from it. Trays may come keyed by name (`{"todo": [...]}`) or as a
plain array of arrays; a node's tray name stands in for its status when the node has none. A node id
names one node: a dashboard listing an id twice is refused (`check_dashboard`), never read as one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from contracts.common import ErrorDetail
from contracts.limits import PROPOSAL
from contracts.proposal_quality import Dashboard, DashboardNode
from graphs.errors import MAX_DETAILS, InvalidInput, raise_if_problems
from graphs.llm.validation import child_path

MAX_BOARD_NODES = PROPOSAL.nodes_total
"""Nodes in one dashboard at most (after flattening); a bigger board is INVALID_INPUT."""


class BoardNode(msgspec.Struct, frozen=True, gc=False):
    """One node of the dashboard, with the tray it was listed in.

    A Struct rather than a frozen dataclass: every request flattens the whole dashboard, and a frozen
    dataclass costs about ten times as much to build (one `object.__setattr__` per field).
    """

    id: str
    title: str
    status: str
    tray: str
    parent_id: str | None = None

    @property
    def status_label(self) -> str:
        """The node's status, else its tray's name, else the empty string."""
        return self.status.strip() or self.tray.strip()


@dataclass(frozen=True, slots=True)
class Board:
    """The dashboard's nodes in tray order, each id once (a request's dashboard passed `check_dashboard`)."""

    nodes: tuple[BoardNode, ...]
    by_id: dict[str, BoardNode]

    @classmethod
    def of(cls, nodes: list[BoardNode]) -> Board:
        """A board of these nodes; a repeated id (which no request's dashboard has) keeps its first listing."""
        by_id: dict[str, BoardNode] = {}
        for node in nodes:
            by_id.setdefault(node.id, node)
        return cls(nodes=tuple(by_id.values()), by_id=by_id)

    @property
    def ids(self) -> list[str]:
        """The valid node ids, in dashboard order."""
        return [node.id for node in self.nodes]

    @property
    def valid_ids(self) -> frozenset[str]:
        """The valid node ids as a set, for the validator."""
        return frozenset(self.ids)

    def get(self, node_id: str | None) -> BoardNode | None:
        """The node with this id, or None."""
        return self.by_id.get(node_id) if node_id else None

    def children_of(self, node_id: str) -> list[BoardNode]:
        """The nodes whose `parentId` is this node, in dashboard order."""
        return [node for node in self.nodes if node.parent_id == node_id and node.id != node_id]

    def siblings_of(self, node: BoardNode) -> list[BoardNode]:
        """The other nodes listed in the same tray (its neighbours on the board), in dashboard order."""
        return [other for other in self.nodes if other.tray == node.tray and other.id != node.id]

    def title_of(self, node_id: str) -> str:
        """The node's title (its id when it has none), for display."""
        node = self.get(node_id)
        return (node.title.strip() or node.id) if node else node_id


def _named_trays(dashboard: Dashboard) -> Iterable[tuple[str, list[DashboardNode]]]:
    """Each tray with its name (a tray listed in an array is named by its position)."""
    return ((key if isinstance(key, str) else f"トレイ{key + 1}", tray) for key, tray in _keyed_trays(dashboard))


def _keyed_trays(dashboard: Dashboard) -> Iterable[tuple[str | int, list[DashboardNode]]]:
    """Each tray with its key in `trays`: its name, or its position in the array."""
    trays = dashboard.trays
    return trays.items() if isinstance(trays, dict) else enumerate(trays)


def board_size(dashboard: Dashboard) -> int:
    """How many nodes the dashboard lists, over all its trays, without flattening it."""
    trays = dashboard.trays
    return sum(map(len, trays.values() if isinstance(trays, dict) else trays))


def check_board_size(dashboard: Dashboard, *, path: str = "$.dashboard") -> None:
    """Refuse a dashboard of more than `MAX_BOARD_NODES` nodes, without flattening it.

    Raises:
        InvalidInput: HTTP 413, path `<path>.trays`: a total, as in `graphs/request_limits.py`.
    """
    if board_size(dashboard) > MAX_BOARD_NODES:
        message = f"the dashboard has more than {MAX_BOARD_NODES:,} nodes (proposal nodes_total)"
        raise InvalidInput(message, [ErrorDetail(path=f"{path}.trays", message=message)], status_code=413)


def check_dashboard(dashboard: Dashboard, *, path: str = "$.dashboard") -> None:
    """The checks every operation makes on a dashboard: its size, each id once, then its `parentId`s.

    Raises:
        InvalidInput: 413 over the node total; 422 for each listing of an id already listed, at that
            listing's `id` with the first listing's path in the message; 422 for each `parentId` that
            contradicts the board, at that `parentId`.
    """
    check_board_size(dashboard, path=path)
    ids = [node.id for _, tray in _keyed_trays(dashboard) for node in tray]
    unique = set(ids)
    if len(unique) == len(ids):  # the common case, without building a path per node
        _check_parents(dashboard, unique, path)
        return
    first: dict[str, str] = {}
    problems: list[ErrorDetail] = []
    for key, tray in _keyed_trays(dashboard):
        for index, node in enumerate(tray):
            where = f"{child_path(f'{path}.trays', key)}[{index}].id"
            seen = first.setdefault(node.id, where)
            if seen is not where:  # an earlier listing has this id
                problems.append(ErrorDetail(path=where, message=f"node id {node.id!r} is already listed at {seen}"))
    raise_if_problems(problems, "a node id is listed twice on the dashboard", status_code=422)


def _check_parents(dashboard: Dashboard, ids: set[str], path: str) -> None:
    """Refuse a `parentId` the board contradicts: the node itself, or a parent on a cycle of parents.

    On a cycle every node is its own ancestor, so "the children of a node" has no answer. A parent that is
    not on the board (filtered out or archived by the system that lists the dashboard, or `""`) contradicts
    nothing: that node has no parent among the board's nodes (`Board.children_of` never finds it).
    """
    parent_of = {
        node.id: node.parent_id
        for _, tray in _keyed_trays(dashboard)
        for node in tray
        if node.parent_id is not None and node.parent_id in ids
    }
    on_cycle = _cycles(parent_of)
    if not on_cycle:  # the common case, without building a path per node
        return
    problems: list[ErrorDetail] = []
    for key, tray in _keyed_trays(dashboard):
        for index, node in enumerate(tray):
            if node.id not in on_cycle:
                continue
            if len(problems) < MAX_DETAILS:  # a cycle of 10,000 nodes builds 20 messages, not 10,000
                cycle, at = on_cycle[node.id]
                message = (
                    f"node {node.id!r} names itself as its parent"
                    if len(cycle) == 1
                    else f"node {node.id!r} is its own ancestor: {_cycle_text(cycle, at)}"
                )
                where = f"{child_path(f'{path}.trays', key)}[{index}].parentId"
                problems.append(ErrorDetail(path=where, message=message))
    raise_if_problems(problems, "a parentId contradicts the dashboard", status_code=422, total=len(on_cycle))


CYCLE_SHOWN = 6
"""Nodes of a cycle a message names (a cycle can hold every node of the board)."""


def _cycle_text(cycle: list[str], at: int) -> str:
    """`a → b → a` from the member at `at`; a long cycle shows its first `CYCLE_SHOWN` nodes and its length."""
    size = len(cycle)
    shown = [cycle[(at + k) % size] for k in range(min(size, CYCLE_SHOWN))]
    if size <= CYCLE_SHOWN:
        return " → ".join([*shown, shown[0]])
    return " → ".join(shown) + f" → … → {shown[0]} (a cycle of {size:,} nodes)"


def _cycles(parent_of: dict[str, str]) -> dict[str, tuple[list[str], int]]:
    """Every node on a cycle of parents, with its cycle (one list shared by the members) and its place in it.

    Each node is walked up from once: a walk stops at a node an earlier walk settled, so a chain of 10,000
    nodes costs 10,000 steps, not 50 million.
    """
    on_cycle: dict[str, tuple[list[str], int]] = {}
    settled: set[str] = set()
    for start in parent_of:
        if start in settled:
            continue
        walk: dict[str, int] = {}
        current: str | None = start
        while current is not None and current not in settled and current not in walk:
            walk[current] = len(walk)
            current = parent_of.get(current)
        if current is not None and current in walk:
            cycle = list(walk)[walk[current] :]
            on_cycle.update((member, (cycle, i)) for i, member in enumerate(cycle))
        settled.update(walk)
    return on_cycle


def has_node(dashboard: Dashboard, node_id: str) -> bool:
    """Whether some tray lists a node with this id (what `board_from_dashboard(...).get(node_id)` finds)."""
    trays = dashboard.trays
    return any(node.id == node_id for tray in (trays.values() if isinstance(trays, dict) else trays) for node in tray)


def board_from_dashboard(dashboard: Dashboard, *, path: str = "$.dashboard") -> Board:
    """Flatten the trays into a `Board`.

    Raises:
        InvalidInput: More than `MAX_BOARD_NODES` nodes (`check_board_size`).
    """
    check_board_size(dashboard, path=path)
    nodes: list[BoardNode] = []
    for tray_name, tray in _named_trays(dashboard):
        nodes += (
            BoardNode(id=node.id, title=node.title, status=node.status, tray=tray_name, parent_id=node.parent_id)
            for node in tray
        )
    return Board.of(nodes)
