"""User-facing texts in the question's language (graphs/grace/messages.yaml), so a Japanese UI reads Japanese."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

from graphs.grace.complexity import is_japanese


@lru_cache(maxsize=1)
def _messages() -> dict[str, dict[str, str]]:
    raw: dict[str, dict[str, str]] = yaml.safe_load(
        resources.files(__package__).joinpath("messages.yaml").read_text(encoding="utf-8")
    )
    return raw


def say(key: str, language_of: str, /, **values: object) -> str:
    """The text `key` in the language of `language_of` (the question: Japanese or English), `values` filled in."""
    entry = _messages()[key]
    return entry["ja" if is_japanese(language_of) else "en"].format(**values)
