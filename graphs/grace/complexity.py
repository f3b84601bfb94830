"""The embedded engine's complexity estimate (seed 002 §8.1 "キーワードマッチング"), from 0.0 to 1.0.

Each cue category of `complexity_cues.yaml` a question matches adds its weight once; several questions
in one (more than one `?`/`？`) and long questions add more. The planner compares the estimate with
`planner.complexity_threshold` to choose between the search → answer template and a multi-step plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Annotated

import msgspec

from graphs.config_files import read_typed
from graphs.text.normalize import normalize
from graphs.text.tokenize import terms

MULTI_QUESTION_WEIGHT = 0.5
"""Two or more questions in one message need at least two searches."""
LONG_QUESTION_TERMS = (8, 15)
"""Content-term counts above which a question counts as long (+0.1) and very long (+0.2)."""

_QUESTION_MARKS = re.compile(r"[?？]")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


@dataclass(frozen=True)
class CueCategory:
    """One row of the cue table."""

    name: str
    weight: float
    cues: tuple[str, ...]


class _CueSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row of complexity_cues.yaml as written (checked at start-up: a wrong type stops the service)."""

    weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    cues: list[str]


@lru_cache(maxsize=1)
def cue_table() -> tuple[CueCategory, ...]:
    """The cue categories, loaded once per process."""
    raw = read_typed(resources.files(__package__).joinpath("complexity_cues.yaml"), dict[str, _CueSpec])
    return tuple(
        CueCategory(name=name, weight=spec.weight, cues=tuple(normalize(c) if c.strip() else c for c in spec.cues))
        for name, spec in raw.items()
    )


def is_japanese(text: str) -> bool:
    """Whether the text contains kana or kanji (our messages and answers follow the question's language)."""
    return bool(_JAPANESE.search(text))


def matched_categories(query: str) -> list[str]:
    """The cue categories the query matches, in table order."""
    text = f" {normalize(query)} "
    return [c.name for c in cue_table() if any(cue in text for cue in c.cues)]


def keyword_complexity(query: str) -> float:
    """The keyword estimate of how many steps the question needs, in [0, 1] (deterministic)."""
    weights = {c.name: c.weight for c in cue_table()}
    score = sum(weights[name] for name in matched_categories(query))
    if len(_QUESTION_MARKS.findall(query.strip().rstrip("?？"))) >= 1:
        score += MULTI_QUESTION_WEIGHT
    count = len(terms(query))
    if count > LONG_QUESTION_TERMS[1]:
        score += 0.2
    elif count > LONG_QUESTION_TERMS[0]:
        score += 0.1
    return round(min(1.0, score), 4)
