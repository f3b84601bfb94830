r"""Import and export of the official ACE playbook text format (github.com/ace-agent/ace-appworld).

    ## STRATEGIES AND HARD RULES
    [shr-00001] Make sure to end code blocks with ``` followed by a newline(\n).
    [shr-00009] helpful=3 harmful=1 :: When syncing contacts across platforms ...

A `## HEADING` line starts a section; its snake_case form is the section name (`APIs TO USE FOR
SPECIFIC INFORMATION` → `apis_to_use_for_specific_information`, as in `config/sections.yaml`), and the
heading itself is kept in `PlaybookMetadata.section_titles` so export writes it back unchanged, empty
sections included. A bullet is `[id] content`, or `[id] helpful=X harmful=Y :: content` when it has
counters; content that starts like counters (`helpful=`, `Harmful =`) but is not exactly that form is an
error, not text, and export writes such content after `helpful=0 harmful=0 :: `. Blank lines are layout
only. The official format has no multi-line bullets; a bullet whose content has line breaks is written
with its further lines indented by two spaces, and read back so.
Line breaks are `\n`: a file saved with Windows (`\r\n`) or old Mac (`\r`) line endings reads the same,
a leading byte-order mark is ignored, and a `\r` inside content is written as a line break.

Export writes each section's bullets under its heading in playbook order, one blank line between
sections: the real playbooks come back with every heading and bullet line identical (only the placement
of blank lines is normalised), and `import(export(p)) == p` for any playbook grouped by section.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import msgspec

from contracts.ace import Bullet, Playbook, PlaybookMetadata
from graphs.ace.playbook.ids import high_water
from graphs.text.blank import invisible

_HEADING = re.compile(r"^## (?P<title>.*?)\s*$")
_BULLET = re.compile(r"^\[(?P<id>[^\]\s]+)\] (?P<rest>.*)$", re.DOTALL)
_COUNTERS = re.compile(
    r"^helpful=(?P<helpful>[0-9]{1,12}) harmful=(?P<harmful>[0-9]{1,12}) :: (?P<content>.*)$", re.DOTALL
)
# What a reader would take for vote counters: such a start that is not exactly `_COUNTERS` is refused, not
# kept as content (its votes would be lost without a word), and export writes counters before such content.
_COUNTERS_LIKE = re.compile(r"^\s*(?:helpful|harmful)\s*=", re.IGNORECASE)
CONTINUATION = "  "
_COUNTERS_LIKE_WINDOW = 40
"""Visible characters in which `_looks_like_counters` reads `helpful=` (white space and invisible ones aside)."""


class PlaybookTextError(ValueError):
    """The text is not a playbook in the ACE format; the message names the line."""


def heading_to_section(title: str) -> str:
    """`PROBLEM-SOLVING HEURISTICS AND WORKFLOWS` → `problem_solving_heuristics_and_workflows`.

    NFKC first: a heading that looks the same must name the same section, whichever way its characters are
    encoded (`ガイド` composed or as カ + a combining mark; `ＧＥＮＥＲＡＬ` in full-width letters). Letters,
    digits and the marks that belong to them (a combining mark case folding leaves, as in `İ` → `i̇`;
    Devanagari vowel signs) make the words; every other run of characters is one `_`.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", title).casefold())
    spaced = "".join(c if c.isalnum() or unicodedata.category(c) in _MARKS else " " for c in folded)
    return "_".join(spaced.split())


_MARKS = frozenset({"Mn", "Mc", "Me"})
"""Combining marks: part of the word they sit on, not separators."""


def section_to_heading(section: str) -> str:
    """The heading for a section with no recorded title: `verification_checklist` → `VERIFICATION CHECKLIST`."""
    return section.replace("_", " ").upper()


def normalize_newlines(text: str) -> str:
    r"""`\r\n` and lone `\r` as `\n`: content as the format can carry it."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_playbook(text: str) -> Playbook:
    """Read a playbook in the ACE text format (see `parse_playbook_lines`)."""
    return parse_playbook_lines(text)[0]


def parse_playbook_lines(text: str) -> tuple[Playbook, list[int]]:
    """Read a playbook in the ACE text format, with the line number of each bullet (for error messages).

    Args:
        text: The file's content, any line endings (see the module docstring).

    Returns:
        The bullets in file order; `metadata.section_titles` records every heading, and
        `metadata.last_bullet_number` the largest id number, so new ids continue after it.

    Raises:
        PlaybookTextError: A line is neither a heading, a bullet, a continuation nor blank; a bullet comes
            before any heading; an id repeats; or a field breaks the contract (bad id, empty content).
    """
    text = normalize_newlines(text.removeprefix("\ufeff"))
    titles: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    section: str | None = None
    in_bullet = False  # a continuation line extends the bullet right above it, nothing else
    for number, line in enumerate(text.split("\n"), start=1):
        heading = _HEADING.match(line)
        if heading:
            section = _heading_section(heading, number)
            titles.setdefault(section, heading.group("title"))
            in_bullet = False
            continue
        if in_bullet and line.startswith(CONTINUATION):
            rows[-1]["content"] = f"{rows[-1]['content']}\n{line[len(CONTINUATION) :]}"
            continue
        if not line.strip():
            in_bullet = False
            continue
        rows.append(_bullet_row(line, number, section))
        lines.append(number)
        in_bullet = True
    playbook = Playbook(metadata=PlaybookMetadata(section_titles=titles), bullets=_checked_bullets(rows, lines))
    playbook.metadata.last_bullet_number = high_water(playbook)
    return playbook, lines


def _heading_section(heading: re.Match[str], number: int) -> str:
    """The section id a heading opens; a heading that names nothing would file bullets under an empty id."""
    section = heading_to_section(heading.group("title"))
    if not section:
        raise PlaybookTextError(f"line {number}: a heading needs a name")
    return section


def _bullet_row(line: str, number: int, section: str | None) -> dict[str, Any]:
    """One bullet line as the fields of a `Bullet`; anything else here is not the ACE format, so it is refused."""
    match = _BULLET.match(line)
    if match is None:
        raise PlaybookTextError(f"line {number}: expected '## HEADING' or '[id] content', got {line[:80]!r}")
    if section is None:
        raise PlaybookTextError(f"line {number}: bullet {match.group('id')!r} comes before any '## ' heading")
    rest = match.group("rest")
    counters = _COUNTERS.match(rest)
    row: dict[str, Any] = {"id": match.group("id"), "section": section, "content": rest}
    if counters is None and _looks_like_counters(rest):
        raise PlaybookTextError(
            f"line {number}: bullet {match.group('id')!r} starts like vote counters but is not "
            "'helpful=X harmful=Y :: content' (X and Y whole numbers in ASCII digits, helpful first, one space "
            f"between the parts); got {rest[:60]!r}. Content that begins so is written after "
            "'helpful=0 harmful=0 :: '"
        )
    if counters:
        row |= {
            "content": counters.group("content"),
            "helpful": int(counters.group("helpful")),
            "harmful": int(counters.group("harmful")),
        }
    return row


def _checked_bullets(rows: list[dict[str, Any]], lines: list[int]) -> list[Bullet]:
    """The rows as bullets under the contract; an id names one bullet, or UPDATE and DELETE deltas are ambiguous."""
    bullets = [_bullet(row, line_no) for row, line_no in zip(rows, lines, strict=True)]
    seen: dict[str, int] = {}
    for bullet, line_no in zip(bullets, lines, strict=True):
        if bullet.id in seen:
            raise PlaybookTextError(f"line {line_no}: id {bullet.id!r} repeats line {seen[bullet.id]}")
        seen[bullet.id] = line_no
    return bullets


def _bullet(row: dict[str, Any], line: int) -> Bullet:
    try:
        return msgspec.convert(row, Bullet)
    except msgspec.ValidationError as exc:
        raise PlaybookTextError(f"line {line}: {exc}") from None


def export_playbook(playbook: Playbook) -> str:
    """Write a playbook in the ACE text format (see the module docstring); ends with a newline."""
    order = list(playbook.metadata.section_titles)
    order += [
        s for s in dict.fromkeys(b.section for b in playbook.bullets) if s not in playbook.metadata.section_titles
    ]
    by_section: dict[str, list[Bullet]] = {section: [] for section in order}
    for bullet in playbook.bullets:
        by_section[bullet.section].append(bullet)
    blocks = []
    for section in order:
        title = playbook.metadata.section_titles.get(section, "")
        if heading_to_section(title) != section:  # a title that would read back as another section
            title = section_to_heading(section)
        blocks.append("\n".join([f"## {title}", *(_line(b) for b in by_section[section])]))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _looks_like_counters(text: str) -> bool:
    """Whether `text` starts like vote counters to a reader: `_COUNTERS_LIKE` after NFKC, invisible characters left out.

    `ｈｅｌｐｆｕｌ＝３` (full-width) or `helpful=3` behind a zero-width space shows as counters, so it is
    read as they are: refused on import unless exactly `_COUNTERS`, and written after counters on export.
    The window read holds `_COUNTERS_LIKE_WINDOW` visible characters; white space and invisible characters
    do not count toward it (`helpful` then 50 spaces then `=` still starts like counters), and a run of
    white space is kept as one space.
    """
    window: list[str] = []
    visible_count = 0
    for ch in text:
        if invisible(ch):
            continue
        if ch.isspace():
            if window and window[-1] != " ":
                window.append(" ")
            continue
        window.append(ch)
        visible_count += 1
        if visible_count >= _COUNTERS_LIKE_WINDOW:
            break
    return _COUNTERS_LIKE.match(unicodedata.normalize("NFKC", "".join(window))) is not None


def _line(bullet: Bullet) -> str:
    content = normalize_newlines(bullet.content).replace("\n", "\n" + CONTINUATION)
    if bullet.helpful or bullet.harmful or _looks_like_counters(bullet.content):
        return f"[{bullet.id}] helpful={bullet.helpful} harmful={bullet.harmful} :: {content}"
    return f"[{bullet.id}] {content}"
