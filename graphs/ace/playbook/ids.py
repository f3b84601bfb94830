"""Bullet ids: `<section-prefix>-<nnnnn>`, unique within a playbook and never reused.

As in the official ACE playbooks (shr-00001, api-00004, psw-00002 ...), the number is one counter across
all sections. The counter's high-water mark travels in `PlaybookMetadata.last_bullet_number`, so an id
freed by a DELETE is not issued again; the largest number found in the ids themselves is taken too, so a
playbook whose metadata was lost or edited still never gets a duplicate. The counter stops at the
contract's `MAX_BULLET_NUMBER`: an id past it would give a playbook the service itself refuses, so the
allocator, which every new id comes from (`/agent/ace/curate` and `/workflow/run`, through the curator's
merge), is the one place that says no: `BulletIdsExhausted`, a 422, before anything is returned or saved.
An import issues no ids. An id may end in a number past the maximum (`doc-20240101120000`, a ticket or a
timestamp): it does not move the mark, since no id the allocator issues can be that large, so it can never
be repeated; counting it would leave the playbook unable to add a bullet, for good (an import keeps the mark).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from contracts.ace import MAX_BULLET_NUMBER, Playbook
from contracts.common import ErrorDetail
from graphs.errors import InvalidInput

_NUMBER = re.compile(r"-([0-9]+)$")
ID_DIGITS = 5
_MAX_DIGITS = len(str(MAX_BULLET_NUMBER))
COUNTER_PATH = "$.playbook.metadata.last_bullet_number"
"""Where the counter is in a request that carries its playbook (the default path of `BulletIdsExhausted`)."""
UNPROCESSABLE = 422


class BulletIdsExhausted(InvalidInput):
    """The counter is at `MAX_BULLET_NUMBER`: no bullet can be added (422, and nothing is changed or written)."""

    def __init__(self, dataset: str, path: str) -> None:
        message = (
            f"the playbook of dataset {dataset!r} has no bullet id left: its id counter "
            f"(metadata.last_bullet_number, or the largest number ending one of its bullet ids) is at the "
            f"contract's maximum, {MAX_BULLET_NUMBER}, so no bullet can be added (nothing was changed)"
        )
        super().__init__(message, [ErrorDetail(path=path, message=message)], status_code=UNPROCESSABLE)


def id_number(bullet_id: str) -> int | None:
    """The number at the end of an id (`shr-00042` → 42); None when it has none, or one past `MAX_BULLET_NUMBER`.

    A number past the maximum is not one the allocator could issue (see the module docstring).
    """
    match = _NUMBER.search(bullet_id)
    if match is None:
        return None
    digits = match.group(1).lstrip("0") or "0"  # a stored file's ids are not bounded: no int() of 5,000 digits
    if len(digits) > _MAX_DIGITS:
        return None
    number = int(digits)
    return number if number <= MAX_BULLET_NUMBER else None


def high_water(playbook: Playbook) -> int:
    """The largest bullet number this playbook has ever issued or holds."""
    numbers = (id_number(b.id) for b in playbook.bullets)
    return max([playbook.metadata.last_bullet_number, *(n for n in numbers if n is not None)])


class IdAllocator:
    """Issues fresh ids above the high-water mark; remembers the new mark for the metadata."""

    def __init__(self, playbook: Playbook, *, dataset: str = "", path: str = COUNTER_PATH) -> None:
        """Start above `playbook`'s high-water mark, avoiding every id it holds.

        Args:
            playbook: The playbook new ids go into.
            dataset: Its dataset, named when no id is left.
            path: The JSON path a caller is pointed to when no id is left (the counter, or what selected a
                stored playbook).
        """
        self.last = high_water(playbook)
        self._taken = {b.id for b in playbook.bullets}
        self._dataset = dataset
        self._path = path

    def issue(self, prefix: str) -> str:
        """A new id for a bullet whose section uses `prefix`.

        Raises:
            BulletIdsExhausted: The next number would pass `MAX_BULLET_NUMBER`.
        """
        while True:
            if self.last >= MAX_BULLET_NUMBER:
                raise BulletIdsExhausted(self._dataset, self._path)
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
