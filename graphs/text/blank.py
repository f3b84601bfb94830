"""Whether a caller's text says anything at all.

A question or query made only of whitespace, control or format characters (a zero-width space, say) has
nothing to search for or answer: it is refused as input, not run into a polite "no evidence" or a ranking
of everything at the same score, and not taken as an answer to a question the agent asked.
"""

from __future__ import annotations

import unicodedata

from contracts.common import ErrorDetail


def invisible(ch: str) -> bool:
    """A control or format character (Cc, Cf: a zero-width space, a byte-order mark): it shows nothing."""
    return unicodedata.category(ch) in ("Cc", "Cf")


def is_blank(text: str | None) -> bool:
    """True for None, "" and any text with no visible character (only whitespace and `invisible` ones)."""
    return text is None or all(ch.isspace() or invisible(ch) for ch in text)


def blank_problems(fields: list[tuple[str, str | None]]) -> list[ErrorDetail]:
    """A problem at each (JSON path, value) whose value is given but blank."""
    message = "must contain visible text (it holds only whitespace or invisible characters)"
    return [ErrorDetail(path=path, message=message) for path, value in fields if value is not None and is_blank(value)]
