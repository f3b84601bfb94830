"""User-facing texts in the question's language (graphs/grace/messages.yaml), so a Japanese UI reads Japanese.

Numbers are shown through `figure`, never with a fixed format: two decimals read naturally, but
rounding 0.6951 to "0.70" tells the user a CONFIRM result met the NOTIFY threshold (0.7) when it did
not. `figure` adds digits until the shown value sits on the same side of every threshold as the
value itself, and `say` refuses a bare float so no message can bypass it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from importlib import resources

import msgspec

from contracts.grace import Thresholds
from graphs.config_files import read_typed
from graphs.grace.complexity import is_japanese
from graphs.llm.config import ConfigError
from graphs.prompt_files import template_problem

MIN_DECIMALS = 2
MAX_DECIMALS = 6


class _Text(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ja: str
    en: str


@lru_cache(maxsize=1)
def messages() -> dict[str, dict[str, str]]:
    """messages.yaml, every entry with both languages (checked at start-up)."""
    source = resources.files(__package__).joinpath("messages.yaml")
    raw = read_typed(source, dict[str, _Text])
    for key, text in raw.items():
        for language, template in (("ja", text.ja), ("en", text.en)):
            problem = template_problem(template)
            if problem is not None:
                raise ConfigError(f"{source}: {key}.{language}: {problem}")
    return {key: {"ja": text.ja, "en": text.en} for key, text in raw.items()}


def figure(value: float, limits: Iterable[float] = (), *, exact: bool = False) -> str:
    """`value` with two decimals, or more when fewer would misstate it.

    Args:
        value: The number to show (a confidence, a complexity, a threshold).
        limits: Thresholds the value was compared with: the shown number is on the same side of each
            (at or above, or below) as `value`, so 0.6951 against 0.7 shows "0.695", never "0.70".
        exact: Show every digit up to `MAX_DECIMALS` that the value has (thresholds: 0.675, not 0.68).
    """
    bounds = tuple(limits)
    for decimals in range(MIN_DECIMALS, MAX_DECIMALS + 1):
        text = f"{value:.{decimals}f}"
        shown = float(text)
        if exact and abs(shown - value) > 10 ** -(MAX_DECIMALS + 2):
            continue
        if all((shown >= limit) == (value >= limit) for limit in bounds):
            return text
    return repr(value)  # every digit: no rounding can cross a threshold then


def levels(thresholds: Thresholds) -> tuple[float, float, float]:
    """The three thresholds a confidence is judged against (SILENT, NOTIFY, CONFIRM)."""
    return (thresholds.silent, thresholds.notify, thresholds.confirm)


def say(key: str, language_of: str, /, **values: object) -> str:
    """The text `key` in the language of `language_of` (the question: Japanese or English), `values` filled in.

    Raises:
        TypeError: A value is a float: format it with `figure` first.
    """
    raw = [name for name, value in values.items() if isinstance(value, float)]
    if raw:
        raise TypeError(f"say({key!r}): format {', '.join(raw)} with figure() (a bare float can misstate a threshold)")
    entry = messages()[key]
    return entry["ja" if is_japanese(language_of) else "en"].format(**values)
