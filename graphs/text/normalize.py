"""One canonical form for text before it is compared, de-duplicated or tokenised.

Queries, snippets and bullets arrive from users, LLMs and Markdown sources with full-width letters, half-width
katakana, mixed case and stray whitespace. Everything that compares text (query de-duplication, tokenisation,
shingling, the hashing embedder) goes through `normalize` first so that those variants count as the same text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


def normalize(text: str) -> str:
    """Return `text` in NFKC form, case-folded, with every whitespace run collapsed to one space and trimmed.

    NFKC maps full-width ASCII and half-width katakana to their usual forms (Ｔｏｋｙｏ → Tokyo, ﾀﾜｰ → タワー);
    case folding is the Unicode-correct lower-casing (ß → ss). NFKC runs again after folding because folding can
    produce sequences NFKC would rewrite, and the result must be idempotent for de-duplication to be reliable.

    Args:
        text: Any text.

    Returns:
        The normalised text; the empty string for blank input.
    """
    # `str.split()` cuts at exactly the characters the regex `\s` matches (`str.isspace`, 29 code points)
    # and drops them at both ends: the same result as collapsing runs with `\s+` and stripping, in a third
    # of the time on a search hit.
    return " ".join(_nfkc(_nfkc(text).casefold()).split())


_COMPATIBILITY_CHARS = re.compile("[\xa0-\xff\u2000-\u218f\u3000\uff00-\uffef]")
"""The characters search hits are full of that NFKC may rewrite: Latin-1, punctuation, letterlike symbols
such as ℃, the ideographic space, full- and half-width forms such as （ ）."""


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
