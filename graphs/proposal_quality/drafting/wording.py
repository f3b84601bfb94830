"""Text the embedded engine copies from the dashboard, made safe to quote, and the status vocabulary.

The heuristic reports quote node titles, statuses and the user's intent. Those come from users and
may contain exactly the phrases the validator forbids (a node called 「推奨設定の見直し」), which
would make the engine's own report fail its gate. `neutral` rephrases them (推奨 → 推薦,
すべき → する, ...) and bounds their length. It finds them with the validator's own matcher
(`forbidden_phrases.find_forbidden`), so every spelling the gate objects to — 推　奨, して下さい, ﾍﾞｽﾄ — is
rephrased where it stands, and nothing else is touched.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Literal

from graphs.proposal_quality.forbidden_phrases import find_forbidden
from graphs.proposal_quality.validator import ADVISOR_FORBIDDEN, ORGANIZER_FORBIDDEN
from graphs.text.blank import has_invisible, without_invisible
from graphs.text.normalize import normalize

FORBIDDEN = (*ORGANIZER_FORBIDDEN, *ADVISOR_FORBIDDEN)

REPHRASE: dict[str, str] = {
    "すべき": "する",
    "べき": "",
    "してください": "する",
    "が必要です": "が要ります",
    "ベスト": "最良",
    "推奨": "推薦",
    "正解": "正答",
}
"""What each forbidden phrase becomes in copied text (a test checks every phrase has an entry)."""
_WHITESPACE = re.compile(r"\s+")
MAX_REPHRASES = 16

StatusCategory = Literal["done", "doing", "todo", "hold", "other"]

_CATEGORY_WORDS: dict[StatusCategory, frozenset[str]] = {
    "done": frozenset(
        {"done", "complete", "completed", "closed", "finished", "resolved", "完了", "済", "済み", "終了"}
    ),
    "doing": frozenset({"doing", "in progress", "wip", "active", "started", "進行中", "作業中", "対応中", "着手中"}),
    "todo": frozenset({"todo", "to do", "backlog", "open", "new", "inbox", "未着手", "未対応", "予定"}),
    "hold": frozenset({"hold", "on hold", "blocked", "pending", "waiting", "保留", "待ち", "保留中"}),
}


def neutral(text: str, limit: int = 60) -> str:
    """`text` on one line, at most `limit` characters, with no phrase either validator forbids."""
    flat = _WHITESPACE.sub(" ", visible(text)).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    for _ in range(MAX_REPHRASES):
        found = find_forbidden(flat, FORBIDDEN)
        if found is None:
            return flat
        # Deleting instead once the budget is spent always terminates: the text gets shorter each time.
        flat = flat[: found.start] + REPHRASE[found.phrase] + flat[found.end :]
    while (found := find_forbidden(flat, FORBIDDEN)) is not None:
        flat = flat[: found.start] + flat[found.end :]
    return flat


def visible(text: str) -> str:
    """`text` without its format characters, a control character a space (`without_invisible`), then in NFKC.

    In that order, as `normalize` does: a format character between a letter and its combining mark, taken
    out, lets NFKC compose them (`e\u200b\u0301` is `é`, as `é` is).
    """
    # A printable text has no Cc or Cf character (`str.isprintable`): nothing to take out, no search.
    shown = text if text.isprintable() or not has_invisible(text) else without_invisible(text)
    return shown if unicodedata.is_normalized("NFKC", shown) else unicodedata.normalize("NFKC", shown)


@lru_cache(maxsize=1024)
def status_category(status: str) -> StatusCategory:
    """Which kind of status this is (done, doing, todo, hold), from common English and Japanese words.

    Cached: a board repeats a handful of statuses across all its nodes.
    """
    key = normalize(status).replace("_", " ").replace("-", " ")
    return next((category for category, words in _CATEGORY_WORDS.items() if key in words), "other")
