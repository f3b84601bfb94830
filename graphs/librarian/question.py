"""What the question asks for: its key terms, its weighted bigrams and the kinds of element it needs.

Computed once per step from `user_query` (plus the last user turn of the conversation when the
question leans on it), and shared by the heuristic evaluator, the query planner and the LLM prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

import msgspec

from contracts.librarian import MissingCategory
from graphs.config_files import read_typed
from graphs.text.normalize import normalize
from graphs.text.tokenize import is_function_token, terms, tokenize

ElementCategory = Literal["definition", "formula", "example", "condition", "prerequisite"]

_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
# Trailing question forms removed to turn a question into a compact search phrase.
_JA_TAIL = re.compile(
    r"(?:は|が|を|に|で|と|の)?(?:何|なに|なん|どこ|いつ|誰|だれ|どれ|どの|どんな|どう|なぜ|いくつ|いくら)[^、。]*$"
)
_JA_QUESTION_END = re.compile(r"(?:でしょうか|ですか|ますか|だろうか|のか|か)$")
_JA_QUESTION_WORDS = re.compile(
    r"何番目|何世紀|何時代|何種類|何という|何と|何の|何年|何月|何日|何歳|何回|何度|何人|何色|何|どのような|どのよう|"
    r"どこ|いつ|誰|だれ|どれ|どちら|どなた|どの|どんな|どうして|どう|なぜ|いくつ|いくら|なに|なん"
)
_EN_QUESTION_WORDS = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b")
_EN_QUESTION_HEAD = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how)\b(?:\s+(?:is|are|was|were|do|does|did))?\s*"
)


@dataclass(frozen=True)
class ElementCues:
    """Cue substrings for one element category (graphs/librarian/element_cues.yaml)."""

    question: tuple[str, ...]
    evidence: tuple[str, ...]
    suffix_ja: str
    suffix_en: str


class _Suffix(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ja: str
    en: str


class _CueSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row of element_cues.yaml as written (checked at start-up: a wrong type stops the service)."""

    question: list[str]
    evidence: list[str]
    query_suffix: _Suffix


@lru_cache(maxsize=1)
def element_cues() -> dict[ElementCategory, ElementCues]:
    """Load the cue table once per process."""
    raw = read_typed(resources.files(__package__).joinpath("element_cues.yaml"), dict[ElementCategory, _CueSpec])
    return {
        name: ElementCues(
            question=tuple(normalize(c) for c in spec.question),
            evidence=tuple(normalize(c) if c.strip() else c for c in spec.evidence),
            suffix_ja=spec.query_suffix.ja,
            suffix_en=spec.query_suffix.en,
        )
        for name, spec in raw.items()
    }


@dataclass(frozen=True)
class QuestionProfile:
    """The parts of a question the Librarian reasons with."""

    text: str
    normalized: str
    japanese: bool
    key_terms: tuple[str, ...]
    content_tokens: frozenset[str]
    phrase: str
    stripped: str
    required: tuple[ElementCategory, ...]

    def suffix(self, category: MissingCategory) -> str:
        """The word to add to a query to look for an element of `category`."""
        if category == "term":
            return ""
        cues = element_cues()[category]
        return cues.suffix_ja if self.japanese else cues.suffix_en


def without_question_words(question: str) -> str:
    """The question with its question words and sentence-final question forms removed, the rest kept.

    Full-text search wants the content of the question, not 「何」「ですか」 or "what is"; keeping
    everything else keeps the word order and the context bigrams that make BM25 precise.
    """
    text = normalize(question).rstrip("?？。. ")
    if _JAPANESE.search(text):
        text = _JA_QUESTION_END.sub("", text)
        text = _JA_QUESTION_WORDS.sub(" ", text)
    else:
        text = _EN_QUESTION_WORDS.sub(" ", text)
    return " ".join(text.split()) or normalize(question)


def search_phrase(question: str) -> str:
    """The question without its interrogative tail/head: 「東京タワーの高さは何メートルですか」→「東京タワーの高さ」."""
    text = normalize(question).rstrip("?？。. ")
    if _JAPANESE.search(text):
        trimmed = _JA_TAIL.sub("", text)
        return trimmed if len(trimmed) >= 2 else text
    return _EN_QUESTION_HEAD.sub("", text) or text


def profile_question(user_query: str) -> QuestionProfile:
    """Analyse the question once per step."""
    normalized = normalize(user_query)
    japanese = bool(_JAPANESE.search(normalized))
    content = frozenset(t for t in tokenize(user_query) if not is_function_token(t))
    required = tuple(name for name, cues in element_cues().items() if any(cue in normalized for cue in cues.question))
    return QuestionProfile(
        text=user_query,
        normalized=normalized,
        japanese=japanese,
        key_terms=tuple(terms(user_query)),
        content_tokens=content,
        phrase=search_phrase(user_query),
        stripped=without_question_words(user_query),
        required=required,
    )
