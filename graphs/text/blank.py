"""Whether a caller's text says anything at all.

A question or query made only of whitespace, control or format characters (a zero-width space, say) has
nothing to search for or answer: it is refused as input, not run into a polite "no evidence" or a ranking
of everything at the same score, and not taken as an answer to a question the agent asked.
"""

from __future__ import annotations

import re
import unicodedata

from contracts.common import ErrorDetail

CONTROL_CHARACTERS: tuple[tuple[int, int], ...] = ((0x00, 0x1F), (0x7F, 0x9F))
"""Unicode's control characters (Cc), as code point ranges: fixed by the standard."""
FORMAT_CHARACTERS: tuple[tuple[int, int], ...] = (
    (0xAD, 0xAD),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
"""Unicode's format characters (Cf) in Unicode 14.0 (Python 3.11's), as code point ranges.

Written out because finding them costs a tenth of a second at start-up. An interpreter with another
Unicode (Python 3.12 has 15.0, which adds some) finds them itself below, so `invisible` and these ranges
never disagree; a test compares them with `unicodedata` on whatever interpreter runs the suite."""
_RANGES_UNICODE = "14.0.0"


def _ranges_of(category: str) -> tuple[tuple[int, int], ...]:
    """Every code point of a general category, as ranges (what the written-out ones are, for `_RANGES_UNICODE`)."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x110000):
        if unicodedata.category(chr(code)) == category:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return tuple(ranges)


if unicodedata.unidata_version != _RANGES_UNICODE:
    FORMAT_CHARACTERS = _ranges_of("Cf")


def _character_class(ranges: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    return re.compile("[" + "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges) + "]")


_CONTROL = _character_class(CONTROL_CHARACTERS)
_FORMAT = _character_class(FORMAT_CHARACTERS)
_INVISIBLE = _character_class(CONTROL_CHARACTERS + FORMAT_CHARACTERS)


def invisible(ch: str) -> bool:
    """A control or format character (Cc, Cf: a zero-width space, a byte-order mark): it shows nothing."""
    return unicodedata.category(ch) in ("Cc", "Cf")


def has_invisible(text: str) -> bool:
    """Whether `text` holds a control or format character (`invisible`), found by one regex search in C."""
    return _INVISIBLE.search(text) is not None


def without_invisible(text: str) -> str:
    """`text` with each control character a space and each format character left out.

    Neither shows anything. A control character stands where something was lost (NUL from a C string), so it
    separates; a format character joins or marks text that reads as one word (a zero-width space in 東京タワー).
    """
    return _FORMAT.sub("", _CONTROL.sub(" ", text))


def is_blank(text: str | None) -> bool:
    """True for None, "" and any text with no visible character (only whitespace and `invisible` ones)."""
    return text is None or all(ch.isspace() or invisible(ch) for ch in text)


def blank_problems(fields: list[tuple[str, str | None]]) -> list[ErrorDetail]:
    """A problem at each (JSON path, value) whose value is given but blank."""
    message = "must contain visible text (it holds only whitespace or invisible characters)"
    return [ErrorDetail(path=path, message=message) for path, value in fields if value is not None and is_blank(value)]
