"""Import and export of stored playbooks in the official ACE text format: one set of checks for every door.

The command line (`python -m graphs.ace import/export/list`) and the HTTP endpoints (`PUT`/`GET
/playbooks/{dataset}`, `GET /playbooks`) both come through here, so a text that one refuses the other
refuses too, with the same message:

- the text must parse (`text_format`), and every bullet's section must be one the dataset allows
  (`config/sections.yaml`); problems name the line of the bullet;
- a text with no bullets at all (an empty file, headings only, a truncated upload) would silently
  replace the stored playbook with an empty one, so it is refused unless the caller says so
  (`allow_empty`);
- exporting a dataset that has no stored playbook is an error (not an empty text), so a typo in a name
  cannot pass for an empty playbook.

Storing replaces the playbook under the store's lock: the stored id high-water mark is kept (ids of
bullets the new text dropped are never issued again) and so is the stored `created_at`. A stored file
that is corrupt does not block its replacement (the import is how it is repaired): what can still be read
of its mark is kept, and its `created_at` is lost.
"""

from __future__ import annotations

import msgspec

from contracts.ace import Playbook
from contracts.common import ErrorDetail
from graphs.ace.checks import playbook_problems
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.playbook.store import PlaybookStore
from graphs.ace.playbook.text_format import PlaybookTextError, export_playbook, parse_playbook_lines
from graphs.errors import MAX_DETAILS, InvalidInput

NOT_FOUND = 404


class PlaybookNotStored(InvalidInput):
    """The dataset has no stored playbook (a 404 over HTTP, exit status 1 on the command line)."""

    def __init__(self, dataset: str) -> None:
        message = f"dataset {dataset!r} has no stored playbook"
        super().__init__(message, [ErrorDetail(path="$.dataset", message=message)], status_code=NOT_FOUND)


def parse_import(text: str, rules: SectionRules, *, allow_empty: bool) -> Playbook:
    """The playbook `text` describes, checked against the dataset's sections.

    Raises:
        InvalidInput: The text does not parse, a bullet's section is not allowed, or (without
            `allow_empty`) the text holds no bullet. `details` name the lines.
    """
    try:
        playbook, lines = parse_playbook_lines(text)
    except PlaybookTextError as exc:
        raise InvalidInput(f"not a playbook in the ACE text format: {exc}", [ErrorDetail(message=str(exc))]) from None
    problems = [
        ErrorDetail(path=p.path, message=f"line {_line_of(p.path, lines)}: {p.message}")
        for p in playbook_problems(playbook, rules, "$")
    ]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidInput(
            f"playbook does not fit dataset {rules.dataset!r}: {problems[0].message}{more}", problems[:MAX_DETAILS]
        )
    if not playbook.bullets and not allow_empty:
        message = (
            "the text holds no bullets: storing it would replace the stored playbook with an empty one "
            "(allow it explicitly to do that on purpose)"
        )
        raise InvalidInput(message, [ErrorDetail(message=message)])
    return playbook


def _line_of(path: str, lines: list[int]) -> int | str:
    """The text line of `$.bullets[i]...` (the problem's bullet), or `?` for anything else."""
    head = path.removeprefix("$.bullets[")
    index = head.split("]", 1)[0]
    return lines[int(index)] if index.isdigit() and int(index) < len(lines) else "?"


def store_replacing(store: PlaybookStore, dataset: str, imported: Playbook) -> Playbook:
    """Save `imported` as the dataset's playbook (command line: waits for the lock); return what was written."""
    previous = store.load_replaceable(dataset) if store.exists(dataset) else None
    return store.save(dataset, _keeping_history(imported, previous))


async def astore_replacing(
    store: PlaybookStore, dataset: str, imported: Playbook, *, deadline: float | None
) -> tuple[Playbook, bool]:
    """`store_replacing` for the event loop (the lock is awaited); also says whether a playbook was replaced."""

    async def replace(fresh: Playbook) -> tuple[Playbook, bool]:
        existed = store.exists(dataset)  # under the lock: nobody can store or remove it meanwhile
        return _keeping_history(imported, fresh if existed else None), existed

    return await store.update(dataset, replace, deadline=deadline, replacing=True)


def _keeping_history(imported: Playbook, previous: Playbook | None) -> Playbook:
    """The imported playbook, dated from the one it replaces (the store keeps its id high-water mark)."""
    if previous is None:
        return imported
    metadata = msgspec.structs.replace(imported.metadata, created_at=previous.metadata.created_at)
    return msgspec.structs.replace(imported, metadata=metadata)


def export_text(store: PlaybookStore, dataset: str) -> str:
    """The stored playbook of `dataset` in the ACE text format.

    Raises:
        PlaybookNotStored: Nothing is stored under that name.
        PlaybookCorrupt: The stored file is not a valid playbook.
    """
    if not store.exists(dataset):
        raise PlaybookNotStored(dataset)
    return export_playbook(store.load(dataset))
