"""The data files shipped inside the graphs package, loaded once at start-up rather than on first use.

Cue tables, word lists and message texts are read lazily (and cached) by the code that uses them. The
service calls `load_packaged_data` while it starts, so a file someone edited into a wrong encoding,
broken YAML or a wrong shape stops the start-up with one `ConfigError` line instead of failing the
first request that happens to need it.
"""

from __future__ import annotations

from collections.abc import Callable

from graphs.grace.complexity import cue_table
from graphs.grace.wording import messages
from graphs.librarian.question import answer_type_cues, asking_words, element_cues
from graphs.proposal_quality.drafting.advisor import advisor_texts
from graphs.text.tokenize import stoplists

LOADERS: tuple[Callable[[], object], ...] = (
    stoplists,
    element_cues,
    answer_type_cues,
    asking_words,
    cue_table,
    messages,
    advisor_texts,
)
"""Every cached loader of a packaged data file."""


def load_packaged_data() -> None:
    """Load (and so check) every packaged data file.

    Raises:
        ConfigError: A file is unreadable, not UTF-8, not valid YAML or not of the expected shape.
    """
    for load in LOADERS:
        load()
