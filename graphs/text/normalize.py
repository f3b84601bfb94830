"""One canonical form for text before it is compared, de-duplicated or tokenised.

Queries, snippets and bullets arrive from users, LLMs and Markdown sources with full-width letters, half-width
katakana, mixed case and stray whitespace. Everything that compares text (query de-duplication, tokenisation,
shingling, the hashing embedder) goes through `normalize` first so that those variants count as the same text.
"""

from __future__ import annotations

import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")


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
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _WHITESPACE.sub(" ", folded).strip()
