"""The one matcher for forbidden phrases: the validator's gate and the embedded engine's rephrasing both use it.

A phrase is forbidden in every spelling a reader would take for it, so text and phrase are compared in a
canonical form that erases what does not change the word:

- width and compatibility forms (NFKC): ﾍﾞｽﾄ and ＢＥＳＴ are ベスト and BEST;
- spacing of every kind and invisible characters: ASCII and ideographic spaces, tabs, newlines, NBSP,
  zero-width and other format characters, variation selectors (`推　奨`, `推\u200b奨`, `ベ ス ト`);
  a voiced mark split off its kana (ヘ゛) is joined back;
- script: katakana is folded to hiragana (ベスト, べすと and ﾍﾞｽﾄ are one word);
- spelling of function words: the kanji spellings 下さい, 出来る, 可き, 為る (and 為て, 為べき) and
  the form するべき are read as ください, できる, べき, する, して, すべき;
- old character forms (奬 for 奨).

The phrase side is expanded from its own kanji: each kanji of a phrase may also be written in its kana
reading (`KANJI_READINGS`), so 推奨 also matches すいしょう and 推しょう, and 必要です ひつようです. No
per-phrase list of spellings exists: a new phrase gets all of this from the tables.

`comparable` is the canonical form, `forbidden_in` says which phrase (as the seed names it) a text
contains, and `find_forbidden` also locates it in the original text so it can be replaced there.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from itertools import product
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

_INVISIBLE = re.compile(
    r"[\s\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    r"\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    r"\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    r"\U000e0000-\U000e0fff]+"
)
"""Whitespace of every kind (`str.isspace`), control and format characters and the other default-ignorable
code points (variation selectors, Hangul fillers, ...): nothing a reader sees between two letters."""

OLD_FORMS = {"奬": "奨", "觧": "解", "爲": "為", "來": "来"}
"""Old or variant kanji forms NFKC keeps apart from the standard form."""
_FOLD = (
    {code: code - 0x60 for code in range(0x30A1, 0x30F7)}  # katakana → hiragana
    | {0x30FD: 0x309D, 0x30FE: 0x309E}
    | {ord(old): ord(new) for old, new in OLD_FORMS.items()}
)

SPELLINGS: tuple[tuple[str, str], ...] = (
    ("下さ", "くださ"),  # 下さい, 下さる, 下さいませ
    ("出来", "でき"),
    ("可き", "べき"),
    ("為べき", "すべき"),
    ("為て", "して"),
    ("為る", "する"),
    ("するべき", "すべき"),
)
"""Kanji (or longer) spellings of function words → the kana spelling; applied one after another (為るべき →
するべき → すべき), after kana folding."""

KANJI_READINGS: dict[str, tuple[str, ...]] = {
    "推": ("すい",),
    "奨": ("しょう",),
    "正": ("せい",),
    "解": ("かい",),
    "必": ("ひつ",),
    "要": ("よう",),
}
"""Kana readings of the kanji that forbidden phrases use (a test checks every such kanji is listed)."""


_FOLDABLE = re.compile("[" + "".join(re.escape(chr(code)) for code in sorted(_FOLD)) + "]+")
"""Runs of the characters `_FOLD` rewrites: only these are handed to `str.translate`."""


def _fold_run(found: re.Match[str]) -> str:
    return found.group().translate(_FOLD)


def comparable(text: str) -> str:
    """`text` in the canonical form phrases are compared in (see the module docstring)."""
    return _canonical(_nfkc(text))


def _nfkc(text: str) -> str:
    # Most texts are NFKC already, and the check is several times cheaper than `normalize` on them.
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def _canonical(nfkc: str) -> str:
    """`comparable` of a text already in NFKC: every step from here on works character by character, up to NFC."""
    folded = _folded_as_array(nfkc) if len(nfkc) >= ARRAY_FROM_CHARS else None
    if folded is None:
        flat = _INVISIBLE.sub("", nfkc)
        # NFKC turns a spacing voiced mark (゛) into space + combining mark; with the space gone, compose again.
        # `translate` with a dict pays a failed lookup for every character it leaves alone (most of a Japanese
        # text): translating only the runs it rewrites gives the same string in half the time.
        folded = _FOLDABLE.sub(_fold_run, unicodedata.normalize("NFC", flat))
    for old, new in SPELLINGS:
        if old in folded:
            folded = folded.replace(old, new)
    return folded


ARRAY_FROM_CHARS = 512
"""From this length on, `_canonical` drops the invisibles and folds the kana as array lookups on the code points.

The two regex passes test every character against large classes: on an Advisor report's strings joined
(`forbidden_in_any`, about 1,300 characters) `_canonical` took 70 µs, with table lookups 25 µs. On a few
hundred characters the arrays' fixed cost is as much as the scan, and on a label or a phrase it is more."""
_BMP = 0x10000


@lru_cache(maxsize=1)
def _bmp_tables() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint32]]:
    """For every BMP code point: whether `_INVISIBLE` drops it, and what `_FOLD` makes of it.

    Read off the regex and the table themselves (one scan of all 65,536 characters, 8–13 ms once per process,
    in the first request with a long text), so the array path cannot drift from them.
    """
    invisible = np.zeros(_BMP, dtype=np.bool_)
    every = "".join(map(chr, range(_BMP)))
    for run in _INVISIBLE.finditer(every):
        invisible[run.start() : run.end()] = True
    fold = np.arange(_BMP, dtype=np.uint32)
    for code, folded in _FOLD.items():
        fold[code] = folded
    invisible.flags.writeable = fold.flags.writeable = False  # shared by every request of the process
    return invisible, fold


def _folded_as_array(nfkc: str) -> str | None:
    """`_INVISIBLE.sub`, NFC, then `_FOLD`, on the code points as one array; None for a text beyond the BMP.

    The tables cover the BMP only (an emoji or a rare kanji beyond it sends the text to the regex path).
    """
    points = np.frombuffer(nfkc.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if int(points.max()) >= _BMP:
        return None
    invisible, fold = _bmp_tables()
    dropped = invisible.take(points)
    if dropped.any():
        points = points[~dropped]
    flat = points.tobytes().decode("utf-32-le", "surrogatepass")
    if not unicodedata.is_normalized("NFC", flat):  # a voiced mark split off its kana by a space now gone
        points = np.frombuffer(unicodedata.normalize("NFC", flat).encode("utf-32-le", "surrogatepass"), np.uint32)
    return fold.take(points).tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=64)
def spellings(phrase: str) -> tuple[str, ...]:
    """Every canonical spelling of `phrase`: each of its kanji as written or as its kana reading."""
    options = [(ch, *KANJI_READINGS.get(ch, ())) for ch in phrase]
    return tuple(dict.fromkeys(comparable("".join(choice)) for choice in product(*options)))


@lru_cache(maxsize=64)
def _any_of(phrases: tuple[str, ...]) -> tuple[re.Pattern[str], bool]:
    """One pattern for every spelling of every phrase, and whether any spelling is pure ASCII.

    The common case, no phrase at all, is then one scan; and when no spelling is ASCII, ASCII text cannot
    contain one, so its normalisation is skipped.
    """
    forms = sorted({form for phrase in phrases for form in spellings(phrase)}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, forms)) or r"(?!)"), any(form.isascii() for form in forms)


def forbidden_in(text: str, phrases: Iterable[str]) -> str | None:
    """The first of `phrases` (as given, e.g. the seed's spelling) that `text` contains in any spelling, or None."""
    candidates = tuple(phrases)
    pattern, ascii_forms = _any_of(candidates)
    if text.isascii() and not ascii_forms:
        return None
    seen = comparable(text)
    if pattern.search(seen) is None:
        return None
    return next((phrase for phrase in candidates if any(form in seen for form in spellings(phrase))), None)


SEPARATOR = "|"
"""Joins texts checked in one pass (`forbidden_in_any`). NFKC and NFC leave it alone and never compose it
with a neighbour, `_INVISIBLE` and `_FOLD` keep it: the canonical form of the joined texts is the canonical
forms joined. No spelling of the service's phrases holds it, so none matches across it (`_joinable` checks,
for phrases a caller might pass)."""


@lru_cache(maxsize=64)
def _joinable(phrases: tuple[str, ...]) -> bool:
    """Whether no spelling of `phrases` holds `SEPARATOR` (one that did could match across two joined texts)."""
    return not any(SEPARATOR in form for phrase in phrases for form in spellings(phrase))


def forbidden_in_any(texts: Iterable[str], phrases: Iterable[str]) -> bool:
    """Whether any of `texts` contains one of `phrases` in any spelling: `forbidden_in` on each, in one pass.

    For a whole report's strings, of which usually none has a phrase: one canonical form and one search
    instead of one per string (per string, the calls cost more than the characters).
    """
    candidates = tuple(phrases)
    if not _joinable(candidates):
        return any(forbidden_in(text, candidates) is not None for text in texts)
    pattern, ascii_forms = _any_of(candidates)
    scanned = [text for text in texts if ascii_forms or not text.isascii()]
    joined = SEPARATOR.join(scanned)
    # Usually all of it is NFKC already, which one check of the whole says (the separator never composes);
    # otherwise NFKC text by text, as normalising a long text that needs it costs far more than checking it.
    if not unicodedata.is_normalized("NFKC", joined):
        joined = SEPARATOR.join(map(_nfkc, scanned))
    return bool(scanned) and pattern.search(_canonical(joined)) is not None


class Found(NamedTuple):
    """A forbidden phrase found in a text: the phrase as given, and where it is in the original text."""

    phrase: str
    start: int
    end: int


def find_forbidden(text: str, phrases: Iterable[str]) -> Found | None:
    """The earliest forbidden phrase in `text` and the shortest span of `text` that spells it.

    Located with `comparable` itself (the shortest prefix that contains the phrase, then the shortest
    suffix of that prefix), so the span is exactly what the validator's check objects to; it is never
    empty, and it is found whenever `forbidden_in` finds a phrase (the whole text is the last prefix).
    """
    candidates = tuple(phrases)
    if forbidden_in(text, candidates) is None:
        return None
    for end in range(1, len(text) + 1):
        ending = [phrase for phrase in candidates if forbidden_in(text[:end], (phrase,)) is not None]
        if ending:  # of the phrases complete here, the longest span (すべき rather than its べき)
            return min((Found(p, _start(text, end, p), end) for p in ending), key=lambda found: found.start)
    return None


def _start(text: str, end: int, phrase: str) -> int:
    """The largest start at which `text[start:end]` still spells `phrase` (`text[:end]` does)."""
    return next(s for s in range(end - 1, -1, -1) if forbidden_in(text[s:end], (phrase,)) is not None)
