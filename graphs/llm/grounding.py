"""The one "drop the ids a model invented" check every agent uses (DESIGN.md §4, grounding).

A reply names ids in a list field: candidate ids the Librarian's model selected, bullet ids the
generator used or the reflector evaluated, the bullets and sections of curator deltas, the source
labels a GRACE answer cites. `KnownIds` says where, and which ids exist (always the set the input
held). The same rule serves both moments of an exchange: before a re-ask it names every invented
id (`problems`), so the model can fix them; after the last reply the items naming one are removed
and logged (`drop`), because an answer without them beats no answer. `keep_known` is the primitive
underneath, for replies that are not Structs (proposal-quality reports are raw JSON).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
import structlog

log = structlog.get_logger(__name__)

I = TypeVar("I")  # noqa: E741 - an item of a list
R = TypeVar("R", bound=msgspec.Struct)

MAX_LOGGED = 50
"""Invented ids named in one log line at most (a hostile model can invent thousands)."""


@dataclass(frozen=True)
class KnownIds:
    """Where a reply names ids, and the ids that exist; an item naming any other id is invented.

    Attributes:
        field: The reply's list field holding the items (e.g. `selected`).
        allowed: The ids the input held: nothing else may come out.
        what: How the re-ask names an allowed id, e.g. `one of the listed candidate ids`.
        key: The attribute of each item that holds its id (`id`, `bullet_id`); None when the
            items are the ids themselves (`used_bullet_ids: list[str]`).
        when: Only items this is true for name an id (e.g. a curator ADD carries no bullet id).
    """

    field: str
    allowed: Collection[str]
    what: str
    key: str | None = None
    when: Callable[[Any], bool] | None = None

    def id_of(self, item: object) -> str | None:
        """The id `item` names, or None when it names none (or the rule does not apply to it)."""
        if self.when is not None and not self.when(item):
            return None
        value = item if self.key is None else _get(item, self.key)
        return value if isinstance(value, str) else None if value is None else str(value)

    def invented(self, reply: object) -> list[tuple[int, str]]:
        """(index, id) of every item of `reply.<field>` that names an id not in `allowed`."""
        found = []
        for index, item in enumerate(_get(reply, self.field) or []):
            named = self.id_of(item)
            if named is not None and named not in self.allowed:
                found.append((index, named))
        return found

    def problems(self, reply: object) -> list[str]:
        """One re-ask message per invented id, with its JSON path."""
        suffix = f".{self.key}" if self.key else ""
        return [
            f"$.{self.field}[{index}]{suffix}: {named!r} is not {self.what}" for index, named in self.invented(reply)
        ]


def unknown_id_problems(reply: object, rules: Sequence[KnownIds]) -> list[str]:
    """Every invented id in `reply`, under every rule, as re-ask messages."""
    return [problem for rule in rules for problem in rule.problems(reply)]


def drop_invented(reply: R, rules: Sequence[KnownIds], *, agent: str) -> R:
    """`reply` without the items that name invented ids; what was removed is logged (a warning)."""
    for rule in rules:
        items: list[Any] = getattr(reply, rule.field)
        kept = keep_known(items, rule.allowed, ids_of=_single(rule), agent=agent)
        if len(kept) != len(items):
            reply = msgspec.structs.replace(reply, **{rule.field: kept})
    return reply


def _single(rule: KnownIds) -> Callable[[Any], list[str | None]]:
    return lambda item: [rule.id_of(item)]


def keep_known(
    items: Iterable[I],
    allowed: Collection[str],
    *,
    agent: str,
    ids_of: Callable[[I], Iterable[str | None]] = lambda item: [item if isinstance(item, str) else None],
) -> list[I]:
    """The items whose every id is in `allowed`; the others are dropped and logged as invented.

    Args:
        items: What the model wrote (ids, or objects carrying ids).
        allowed: The ids the input held.
        agent: Who asked the model, for the log line.
        ids_of: The ids an item names (None entries name nothing); default: the item itself when it
            is a string.
    """
    kept: list[I] = []
    dropped: list[str] = []
    for item in items:
        unknown = [i for i in ids_of(item) if i is not None and i not in allowed]
        if unknown:
            dropped += unknown
        else:
            kept.append(item)
    if dropped:
        log.warning("dropped ids the model invented", agent=agent, dropped=dropped[:MAX_LOGGED], count=len(dropped))
    return kept


def _get(obj: object, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
