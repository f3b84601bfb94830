"""The embedded engine's Advisor: two or three options for one node, built from that node, never a pick.

The target is the focus node, else the node the user's intent names, else the first node that is not
done. What the options say comes from the node and its place on the board, so two different nodes
get different options:

- its title: the kind of work it names (a booking, a migration, a review...: `advisor_options.yaml`)
  sets what information each option asks for, its typical risk and one more criterion; the parts a
  title lists (「告知文の作成・当日の連絡体制」) become the order to take them in;
- its children (nodes whose `parentId` is the target): which are still open, done or on hold decides
  whether to finish the open ones, close the node, or unblock a held child first;
- its status: start now, carry on, confirm as done, or resume from hold (one template per status in
  `advisor_options.yaml`, like the two fallbacks: gather information, or look again before closing);
- its neighbours: another node sharing a title term (「データ移行のテスト」 for 「PostgreSQLへの移行」)
  becomes an option to take them together, and a crowded tray an option to settle the order first.

Each option has the four required items and at least one risk, a suggested status only in the board's
own words, and every text copied from the board goes through `neutral`, so the report passes the same
validator as a model's. With no nodes at all (sample A4) the options are about how to start, and
`target_node_id` is empty: there is no node to point at.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import accumulate
from typing import Any

import msgspec

from contracts.proposal_quality import AdvisorCriterion, AdvisorOption, AdvisorReport
from graphs.config_files import read_typed
from graphs.proposal_quality.board import Board, BoardNode
from graphs.proposal_quality.drafting.wording import StatusCategory, neutral, status_category
from graphs.text.normalize import normalize
from graphs.text.tokenize import normalized_many, terms, terms_of_many

MAX_OPTIONS = 3
MAX_NAMED = 3
"""Nodes named in one sentence at most (「A」「B」ほか2件)."""
LABELS = "ABC"
_TITLE_PARTS = re.compile(r"[、,，・/／&＆+＋]|および|及び|\sand\s")


# --- the texts file -------------------------------------------------------------------------------


class _Criterion(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    description: str


class Kind(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A kind of work, recognised by cues in a title: what it needs, what tends to go wrong."""

    cues: list[str]
    info: str
    risk: str
    criterion: _Criterion | None = None


class _FirstStep(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    label: str
    description: str
    next_action: str
    necessary_info: str
    criteria_note: str
    risks: list[str]


class Draft(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An option before it gets its letter; `status` is the kind of status it would move the node to.

    The templates of `advisor_options.yaml` are drafts too, whose texts hold `{title}`, `{info}`, `{risk}`
    and `{start}` placeholders (`Facts.values`): `fill` makes the option for one node.
    """

    label: str
    description: str
    pros: str
    cons: str
    next_action: str
    necessary_info: str
    criteria_note: str
    risks: list[str]
    status: StatusCategory | None = None

    def fill(self, values: dict[str, str]) -> Draft:
        """The option for one node: every placeholder replaced by that node's text."""
        return Draft(
            label=self.label.format_map(values),
            description=self.description.format_map(values),
            pros=self.pros.format_map(values),
            cons=self.cons.format_map(values),
            next_action=self.next_action.format_map(values),
            necessary_info=self.necessary_info.format_map(values),
            criteria_note=self.criteria_note.format_map(values),
            risks=[risk.format_map(values) for risk in self.risks],
            status=self.status,
        )


class ByStatus(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The option that follows the node's status, one per status kind (a missing one fails at start-up)."""

    done: Draft
    hold: Draft
    todo: Draft
    doing: Draft

    def of(self, category: StatusCategory) -> Draft:
        """The template for a status kind; a status the vocabulary does not know carries on like `doing`."""
        match category:
            case "done":
                return self.done
            case "hold":
                return self.hold
            case "todo":
                return self.todo
        return self.doing


class ByStructure(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The options that follow the node's children, the parts its title lists, or splitting it (`_by_structure`)."""

    held_child: Draft
    finish_children: Draft
    next_child: Draft
    close_with_children: Draft
    first_part: Draft
    split: Draft


class ByNeighbours(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The options that follow the board around the node (`_by_neighbours`)."""

    hand_over: Draft
    reuse_done: Draft
    together: Draft
    order_in_tray: Draft


class AdvisorTexts(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """graphs/proposal_quality/drafting/advisor_options.yaml."""

    kinds: dict[str, Kind]
    first_steps: list[_FirstStep]
    by_status: ByStatus
    by_structure: ByStructure
    by_neighbours: ByNeighbours
    gather_information: Draft
    reopen: Draft


@lru_cache(maxsize=1)
def advisor_texts() -> AdvisorTexts:
    """The Advisor's texts, loaded and checked once (at start-up: `graphs.data_files`)."""
    return read_typed(resources.files(__package__).joinpath("advisor_options.yaml"), AdvisorTexts)


@lru_cache(maxsize=1)
def _kind_cues() -> tuple[tuple[Kind, tuple[str, ...]], ...]:
    """Each kind but the default with its cues normalised, in file order: normalised once, not per title."""
    kinds = advisor_texts().kinds
    return tuple((k, tuple(normalize(cue) for cue in k.cues)) for name, k in kinds.items() if name != "default")


def kind_of(title: str) -> Kind:
    """The kind of work a title names (the first kind with a matching cue), else the default kind."""
    text = f" {normalize(title)} "
    matching = (kind for kind, cues in _kind_cues() if any(cue in text for cue in cues))
    return next(matching, advisor_texts().kinds["default"])


# --- what the board says about the target ---------------------------------------------------------


@dataclass(frozen=True)
class Related:
    """Another node that shares a title term with the target."""

    node: BoardNode
    title: str
    term: str


@dataclass(frozen=True)
class Facts:
    """The target node and its neighbourhood, with every copied text already made safe to quote."""

    node: BoardNode
    title: str
    category: StatusCategory
    kind: Kind
    open_children: list[str]
    done_children: list[str]
    held_children: list[str]
    parts: list[str]
    siblings: list[str]
    """The first `MAX_NAMED` other nodes of its tray (outside its family), the only ones a text names."""
    sibling_count: int
    """How many other nodes its tray lists (outside its family)."""
    tray: str
    related: Related | None
    """The first other node (outside its family) whose title shares a term with its title."""

    @property
    def children(self) -> int:
        """How many children the node has."""
        return len(self.open_children) + len(self.done_children) + len(self.held_children)

    @property
    def info(self) -> str:
        """What information this kind of work asks for, about this node."""
        return self.kind.info.format(title=self.title)

    def values(self) -> dict[str, str]:
        """What an `Draft`'s placeholders stand for, for this node."""
        start = f"子ノードの「{self.open_children[0]}」" if self.open_children else f"「{self.title}」"
        return {"title": self.title, "info": self.info, "risk": self.kind.risk, "start": start}


def _title(node: BoardNode, limit: int = 40) -> str:
    return neutral(node.title, limit) or neutral(node.id, limit) or "無題のノード"


def facts_of(board: Board, node: BoardNode) -> Facts:
    """What the options are built from: the node's title, children, status and neighbours."""
    children = board.children_of(node.id)
    by_category: dict[str, list[str]] = {"open": [], "done": [], "hold": []}
    for child in children:
        category = status_category(child.status_label)
        by_category["done" if category == "done" else "hold" if category == "hold" else "open"].append(_title(child))
    family = {node.id, *(c.id for c in children), *([node.parent_id] if node.parent_id else [])}
    parts = [neutral(p, 30) for p in _TITLE_PARTS.split(node.title)] if not children else []
    own_terms = {t for t in terms(node.title) if len(t) >= 2}
    related = _first_related(board, family, own_terms) if own_terms else None
    siblings = [s for s in board.siblings_of(node) if s.id not in family]
    return Facts(
        node=node,
        title=_title(node),
        category=status_category(node.status_label),
        kind=kind_of(node.title),
        open_children=by_category["open"],
        done_children=by_category["done"],
        held_children=by_category["hold"],
        parts=list(dict.fromkeys(p for p in parts if len(p) >= 2)),
        siblings=[_title(s) for s in siblings[:MAX_NAMED]],
        sibling_count=len(siblings),
        tray=neutral(node.tray, 30),
        related=related,
    )


def _first_related(board: Board, family: set[str], own_terms: set[str]) -> Related | None:
    """The first node outside `family` whose title has one of `own_terms`, with the first such term of its title.

    A title's terms are substrings of its normalised text (`normalized_many`), so the titles worth
    splitting into terms are found by looking the few terms up in all the titles at once: on a usual
    board, a handful of hundreds.
    """
    texts = normalized_many([other.title for other in board.nodes])
    starts = list(accumulate((len(text) + 1 for text in texts), initial=0))
    joined = "\n".join(texts)  # no term holds a newline: each occurrence lies within one title
    candidates: set[int] = set()
    for term in own_terms:
        at = joined.find(term)
        while at != -1:
            candidates.add(bisect_right(starts, at) - 1)
            at = joined.find(term, at + 1)
    for index in sorted(candidates):
        other = board.nodes[index]
        shared = [t for t in terms_of_many([other.title])[0] if t in own_terms]
        if other.id not in family and shared:
            return Related(node=other, title=_title(other), term=neutral(shared[0], 20))
    return None


def _named(titles: list[str], total: int | None = None) -> str:
    """The first `MAX_NAMED` titles quoted, and how many more there are of `total` (default: all of `titles`)."""
    count = len(titles) if total is None else total
    shown = "".join(f"「{t}」" for t in titles[:MAX_NAMED])
    return shown + (f"ほか{count - MAX_NAMED}件" if count > MAX_NAMED else "")


# --- options --------------------------------------------------------------------------------------


def _by_status(f: Facts) -> Draft:
    """The option that follows the node's status: start, carry on, close, or resume (`advisor_options.yaml`)."""
    return advisor_texts().by_status.of(f.category).fill(f.values())


def _by_structure(f: Facts) -> Draft | None:
    """The option that follows the node's children, or the parts its title lists, or splitting it."""
    options = advisor_texts().by_structure
    if f.held_children:
        held = {"held": f.held_children[0], "held_named": _named(f.held_children)}
        return options.held_child.fill(f.values() | held)
    if f.open_children and len(f.done_children) >= len(f.open_children):
        rest = {"rest": _named(f.open_children), "children": str(f.children), "done_count": str(len(f.done_children))}
        return options.finish_children.fill(f.values() | rest)
    if f.open_children:
        first = {"first": f.open_children[0], "open_named": _named(f.open_children)}
        return options.next_child.fill(f.values() | first | {"open_count": str(len(f.open_children))})
    if f.done_children:
        return options.close_with_children.fill(f.values() | {"done_named": _named(f.done_children)})
    if len(f.parts) >= 2:
        parts = {"first": f.parts[0], "rest": _named(f.parts[1:]), "parts_named": _named(f.parts)}
        return options.first_part.fill(f.values() | parts)
    if f.category == "done":
        return None
    return options.split.fill(f.values())


def _by_neighbours(f: Facts) -> Draft | None:
    """The option that follows the board around the node: a related node, a crowded tray."""
    options = advisor_texts().by_neighbours
    if f.related is not None:
        other = f.related
        other_status = status_category(other.node.status_label)
        shown_status = neutral(other.node.status_label, 20) or "未設定"
        values = f.values() | {"other": other.title, "term": other.term, "other_status": shown_status}
        if f.category == "done" and other_status != "done":
            return options.hand_over.fill(values)
        if other_status == "done":
            return options.reuse_done.fill(values)
        return options.together.fill(values)
    if f.sibling_count >= 2 and f.category != "done":
        tray = {"count": str(f.sibling_count), "tray": f.tray or "このトレイ"}
        return options.order_in_tray.fill(f.values() | tray | {"others": _named(f.siblings, f.sibling_count)})
    return None


def _gather_information(f: Facts) -> Draft:
    """The fallback third way: pause to find out what is missing."""
    return advisor_texts().gather_information.fill(f.values())


def _reopen(f: Facts) -> Draft:
    """For a done node with nothing around it: look again before closing for good."""
    return advisor_texts().reopen.fill(f.values())


def drafts_for(facts: Facts) -> list[Draft]:
    """Two or three different ways forward for the node, most specific to it first."""
    drafts = [_by_status(facts)]
    for extra in (_by_structure(facts), _by_neighbours(facts)):
        if extra is not None and extra.label not in {d.label for d in drafts}:
            drafts.append(extra)
    fallback = _reopen(facts) if facts.category == "done" else _gather_information(facts)
    if len(drafts) < MAX_OPTIONS and fallback.label not in {d.label for d in drafts}:
        drafts.append(fallback)
    return drafts[:MAX_OPTIONS]


def _option(board: Board, letter: str, draft: Draft) -> AdvisorOption:
    word = _status_word(board, draft.status) if draft.status else None
    return AdvisorOption(
        label=f"案{letter}: {draft.label}",
        description=draft.description,
        pros=[draft.pros],
        cons=[draft.cons],
        next_action=draft.next_action,
        necessary_info=draft.necessary_info,
        criteria_note=draft.criteria_note,
        risks=list(dict.fromkeys(draft.risks)),
        **({"suggested_status": word} if word else {}),
    )


def _status_word(board: Board, category: StatusCategory) -> str | None:
    """The board's own word for a kind of status, or None when the board has none."""
    word = next((n.status_label for n in board.nodes if status_category(n.status_label) == category), None)
    return None if word is None else neutral(word, 40)


# --- the report -----------------------------------------------------------------------------------


def advisor_report(board: Board, *, focus_id: str | None, intent: str | None, notes: list[str]) -> dict[str, Any]:
    """The Advisor report for `board`, as the JSON a model would return (validated like one)."""
    target = _target(board, focus_id, intent)
    if target is None:
        report = _first_steps(_criteria(None, intent, notes))
    else:
        facts = facts_of(board, target)
        options = [_option(board, letter, draft) for letter, draft in zip(LABELS, drafts_for(facts), strict=False)]
        status = neutral(target.status_label, 30)
        considered = f"ご意向「{neutral(intent, 60)}」も判断材料に含めています。" if intent and intent.strip() else ""
        report = AdvisorReport(
            target_node_id=target.id,
            target_title=facts.title,
            current_status=status,
            options=options,
            criteria=_criteria(facts, intent, notes),
            next_decision=f"「{facts.title}」をどの案で進めるかを決める",
            summary=(
                f"「{facts.title}」（現在のステータス: {status or '未設定'}）について、{_grounds(facts)}"
                f"進め方の案を{len(options)}つ並べました。どれを選ぶかは判断基準に照らして決められます。{considered}"
                "まず各案の「必要な情報」がそろっているかを確認するところから始められます。"
            ),
        )
    built: dict[str, Any] = msgspec.to_builtins(report)
    return built


def _grounds(f: Facts) -> str:
    """What on the board the options were built from, for the summary."""
    seen = []
    if f.children:
        seen.append(f"子ノード{f.children}件（未完了{len(f.open_children) + len(f.held_children)}件）")
    if f.related is not None:
        seen.append(f"関連する「{f.related.title}」")
    if f.sibling_count >= 2:
        seen.append(f"同じトレイの{f.sibling_count}件")
    return f"{'、'.join(seen)}を踏まえて、" if seen else ""


def _target(board: Board, focus_id: str | None, intent: str | None) -> BoardNode | None:
    focus = board.get(focus_id)
    if focus is not None or not board.nodes:
        return focus
    wanted = set(terms(intent or ""))
    if wanted:
        titles = terms_of_many([node.title for node in board.nodes])
        overlap = [(len(wanted.intersection(found)), -i) for i, found in enumerate(titles)]
        best, negative_index = max(overlap)
        if best > 0:
            return board.nodes[-negative_index]
    return next((n for n in board.nodes if status_category(n.status_label) != "done"), board.nodes[0])


def _criteria(facts: Facts | None, intent: str | None, notes: list[str]) -> list[AdvisorCriterion]:
    criteria = [
        AdvisorCriterion(name="期限", description="いつまでに終えたいか、その期限に間に合う見通しがあるか"),
        AdvisorCriterion(name="作業量", description="完了までに残っている作業の量と、使える時間や人手"),
        AdvisorCriterion(name="不確実性", description="まだ分かっていないことが、結果をどれだけ左右しそうか"),
    ]
    if facts is not None and facts.kind.criterion is not None:
        criteria.append(AdvisorCriterion(name=facts.kind.criterion.name, description=facts.kind.criterion.description))
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


def _first_steps(criteria: list[AdvisorCriterion]) -> AdvisorReport:
    """Sample A4: no nodes yet, so the options are about how to start and no node id is named."""
    return AdvisorReport(
        target_node_id="",
        target_title="",
        current_status="",
        options=[msgspec.convert(msgspec.to_builtins(step), AdvisorOption) for step in advisor_texts().first_steps],
        criteria=criteria,
        next_decision="最初のノードをどの形で登録するかを決める",
        summary=(
            "ダッシュボードにノードがまだないため、特定のノードではなく、始め方の案を2つ並べました。"
            "まず登録したい作業が1件に絞れるかどうかを確かめるところから始められます。"
        ),
    )
