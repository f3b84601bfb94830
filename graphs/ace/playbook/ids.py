"""Bullet ids: `<section-prefix>-<nnnnn>`, unique within a playbook and never reused.

As in the official ACE playbooks (shr-00001, api-00004, psw-00002 ...), the number is one counter across
all sections. The counter's high-water mark travels in `PlaybookMetadata.last_bullet_number`, so an id
freed by a DELETE is not issued again; the largest number found in the ids themselves is taken too, so a
playbook whose metadata was lost or edited still never gets a duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from contracts.ace import Playbook

_NUMBER = re.compile(r"-(\d{1,12})$")
ID_DIGITS = 5


def id_number(bullet_id: str) -> int | None:
    """The number at the end of an id (`shr-00042` → 42), or None when the id has none."""
    match = _NUMBER.search(bullet_id)
    return int(match.group(1)) if match else None


def high_water(playbook: Playbook) -> int:
    """The largest bullet number this playbook has ever issued or holds."""
    numbers = (id_number(b.id) for b in playbook.bullets)
    return max([playbook.metadata.last_bullet_number, *(n for n in numbers if n is not None)])


class IdAllocator:
    """Issues fresh ids above the high-water mark; remembers the new mark for the metadata."""

    def __init__(self, playbook: Playbook) -> None:
        """Start above `playbook`'s high-water mark, avoiding every id it holds."""
        self.last = high_water(playbook)
        self._taken = {b.id for b in playbook.bullets}

    def issue(self, prefix: str) -> str:
        """A new id for a bullet whose section uses `prefix`."""
        while True:
            self.last += 1
            candidate = f"{prefix}-{self.last:0{ID_DIGITS}d}"
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate

    def reserve(self, ids: Iterable[str]) -> None:
        """Mark ids as taken (and raise the mark past their numbers)."""
        for bullet_id in ids:
            self._taken.add(bullet_id)
            number = id_number(bullet_id)
            if number is not None:
                self.last = max(self.last, number)
