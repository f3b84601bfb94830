"""One canonical form for text before it is compared, de-duplicated or tokenised.

Queries, snippets and bullets arrive from users, LLMs and Markdown sources with full-width letters, half-width
katakana, mixed case, stray whitespace and invisible characters. Everything that compares text (query
de-duplication, tokenisation, shingling, the hashing embedder) goes through `normalize` first so that those
variants count as the same text.

The Librarian's search terms are written in this form, and the search side (PostgreSQL's
`lower(normalize(text, NFKC))`, Go's `strings.ToLower`) folds chunks its own way: the two foldings must agree, or
a term finds nothing. So case is folded as they fold it, character by character (`lower_case`), and no control
character (which PostgreSQL cannot even store, in the case of NUL) reaches a term.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from graphs.text.blank import has_invisible, without_invisible


def normalize(text: str) -> str:
    """Return `text` in NFKC form, lower-cased, without invisible characters, whitespace runs collapsed and trimmed.

    NFKC maps full-width ASCII and half-width katakana to their usual forms (Ｔｏｋｙｏ → Tokyo, ﾀﾜｰ → タワー);
    lower-casing is `lower_case`'s (ß stays ß, as the search side leaves it). NFKC runs again after lower-casing
    because that can produce sequences NFKC would rewrite, and the result must be idempotent for de-duplication
    to be reliable. A control character is a space and a format character (a zero-width space, a byte-order
    mark, a soft hyphen) is nothing (`without_invisible`): `東京\u200bタワー` reads 東京タワー.

    Args:
        text: Any text.

    Returns:
        The normalised text; the empty string for blank input.
    """
    # `str.split()` cuts at exactly the characters the regex `\s` matches (`str.isspace`, 29 code points)
    # and drops them at both ends: the same result as collapsing runs with `\s+` and stripping, in a third
    # of the time on a search hit.
    folded = " ".join(_nfkc(lower_case(_nfkc(text))).split())
    # After the split only a control, format, private-use, unassigned or surrogate character is not printable:
    # one C-level check keeps the usual text on its way, and a regex search the rest but the invisible.
    if folded.isprintable() or not has_invisible(folded):
        return folded
    return " ".join(_nfkc(lower_case(_nfkc(without_invisible(text)))).split())


def lower_case(text: str) -> str:
    """`text` with each character replaced by its own lower case, as PostgreSQL's `lower()` and Go's `ToLower` do.

    `str.lower` differs from them in two places only: a Σ ending a word becomes ς (the final-sigma rule), and İ
    becomes i followed by a combining dot; each character on its own gives σ and i. (`str.casefold` differs
    more: ß → ss, which no search side's folding of a chunk produces.)
    """
    if "Σ" in text:
        text = text.replace("Σ", "σ")
    if "İ" in text:
        text = text.replace("İ", "i")
    return text.lower()


_COMPATIBILITY_RANGES = ((0xA0, 0xFF), (0x2000, 0x218F), (0x3000, 0x3000), (0xFF00, 0xFFEF))
"""The characters search hits are full of that NFKC may rewrite: Latin-1, punctuation, letterlike symbols
such as ℃, the ideographic space, full- and half-width forms such as （ ）."""
_COMPATIBILITY_CHARS = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _COMPATIBILITY_RANGES) + "]")


@lru_cache(maxsize=2048)
def _char_nfkc(char: str) -> str:
    return unicodedata.normalize("NFKC", char)


def _nfkc(text: str) -> str:
    """`unicodedata.normalize("NFKC", text)`, several times faster on typical snippets.

    Most snippets are NFKC already or only because of a few full-width forms. Replacing characters by
    their own NFKC forms leaves the compatibility decomposition of the whole text unchanged, so NFKC of
    the result is NFKC of the text; when the result is already normalised (a cheap check), it is that.
    """
    if unicodedata.is_normalized("NFKC", text):
        return text
    # A regex finds the few such characters faster than `str.translate` visits every one.
    mapped = _COMPATIBILITY_CHARS.sub(lambda found: _char_nfkc(found.group()), text)
    return mapped if unicodedata.is_normalized("NFKC", mapped) else unicodedata.normalize("NFKC", mapped)


def normalize_many(texts: Sequence[str]) -> list[str]:
    """`[normalize(text) for text in texts]`, with the characters `_nfkc` rewrites found for all texts at once.

    Per snippet, the regex that finds the few full-width forms and symbols costs more than the rest of
    `normalize`. Here one numpy pass over the code points of every text that is not NFKC already finds
    them, and each such text replaces the distinct ones it holds with `str.replace`. Replacing them one
    character at a time gives what the substitution gives, because no character's NFKC form holds another
    character of the class that NFKC would change (a test checks the whole class).
    """
    first = list(texts)
    pending = [i for i, text in enumerate(texts) if not unicodedata.is_normalized("NFKC", text)]
    if pending:
        joined = "".join(texts[i] for i in pending).encode("utf-32-le", "surrogatepass")
        points = np.frombuffer(joined, dtype=np.uint32)
        rewritten = np.zeros(len(points), dtype=bool)
        for low, high in _COMPATIBILITY_RANGES:
            rewritten |= (points >= low) & (points <= high)
        at = np.flatnonzero(rewritten)
        ends = np.cumsum([len(texts[i]) for i in pending])
        # Each (text, character) once, in text order: the owner in the high bits, the code point (< 2**21) low.
        found = np.unique((np.searchsorted(ends, at, side="right") << 21) | points[at].astype(np.int64))
        for key in found.tolist():
            index, char = pending[key >> 21], chr(key & 0x1FFFFF)
            first[index] = first[index].replace(char, _char_nfkc(char))
        for i in pending:
            if not unicodedata.is_normalized("NFKC", first[i]):
                first[i] = unicodedata.normalize("NFKC", first[i])
    folded = [" ".join(_nfkc(lower_case(text)).split()) for text in first]
    if all(map(str.isprintable, folded)):
        return folded
    return [
        done if done.isprintable() or not has_invisible(done) else normalize(text)
        for done, text in zip(folded, texts, strict=True)
    ]
