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
from graphs.config_files import read_text, read_typed
from graphs.llm.config import ConfigError
from graphs.text.first_chars import any_of, guarded
from graphs.text.normalize import normalize
from graphs.text.tokenize import is_function_token, terms, tokenize

ElementCategory = Literal["definition", "formula", "example", "condition", "prerequisite"]
AnswerType = Literal["time", "quantity", "place"]

_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
# Trailing question forms removed to turn a question into a compact search phrase.
_JA_TAIL = re.compile(
    r"(?:は|が|を|に|で|と|の)?(?:何|なに|なん|どこ|いつ|誰|だれ|どれ|どの|どんな|どう|なぜ|いくつ|いくら)[^、。]*$"
)
_HIRAGANA_CHAR = re.compile(r"[\u3041-\u309f]")
_JA_DANGLING = re.compile(r"(?:の|のは|は|が|を|に|で|と)$")
_JA_QUESTION_END = re.compile(r"(?:でしょうか|ですか|ますか|だろうか|のか|か)$")
# 幾何 (geometry) is a word, not 何: the lookbehind keeps 「幾何学」 whole.
_JA_QUESTION_WORDS = re.compile(
    r"(?<!幾)(?:何番目|何世紀|何時代|何種類|何という|何と|何の|何年|何月|何日|何歳|何回|何度|何人|何色|何|どのような|どのよう|"
    r"どこ|いつ|誰|だれ|どれ|どちら|どなた|どの|どんな|どうして|どう|なぜ|いくつ|いくら|なに|なん)"
)
_EN_QUESTION_WORDS = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b")
_EN_QUESTION_HEAD = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how)\b"
    r"(?:\s+(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|many|much|long|far|old|tall)\b)?"
    r"\s*"
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
class AnswerTypeCues:
    """How a question asks for one kind of answer, and how a snippet states one (answer_types.yaml)."""

    question: tuple[str, ...]
    evidence: re.Pattern[str]


class _AnswerTypeSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    question: list[str]
    evidence: str


@lru_cache(maxsize=1)
def answer_type_cues() -> dict[AnswerType, AnswerTypeCues]:
    """Load the answer-type table once per process (checked at start-up, a bad pattern included)."""
    source = resources.files(__package__).joinpath("answer_types.yaml")
    raw = read_typed(source, dict[AnswerType, _AnswerTypeSpec])
    cues = {}
    for name, spec in raw.items():
        try:
            # Guarded by the characters a match can start with: searched in every snippet of every step.
            evidence = guarded(re.compile(spec.evidence))
        except re.error as exc:
            raise ConfigError(f"{source}: {name}.evidence is not a valid regular expression ({exc})") from None
        cues[name] = AnswerTypeCues(question=tuple(normalize(c) for c in spec.question), evidence=evidence)
    return cues


def states_answer_type(normalized_snippet: str, wanted: tuple[AnswerType, ...]) -> bool:
    """Whether a (normalised) snippet states an answer of a type the question asks for."""
    either = _either_answer_type(wanted)
    if either is not None:
        return either.search(normalized_snippet) is not None
    cues = answer_type_cues()
    return any(cues[kind].evidence.search(normalized_snippet) for kind in wanted)


@lru_cache(maxsize=16)
def _either_answer_type(wanted: tuple[AnswerType, ...]) -> re.Pattern[str] | None:
    """The wanted kinds' patterns as one search (`first_chars.any_of`), asked of every snippet of a step."""
    cues = answer_type_cues()
    return any_of([cues[kind].evidence for kind in wanted])


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
    tokens: tuple[str, ...] = ()
    """`tokenize(text)`, in order: worked out once per step for every part that reads the question's tokens."""
    answer_types: tuple[AnswerType, ...] = ()

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
        # English function words carry no content for full-text search ("does", "the", "or"): keep the terms.
        text = " ".join(terms(text))
    return " ".join(text.split()) or normalize(question)


def search_phrase(question: str) -> str:
    """The question without its interrogative tail/head: 「東京タワーの高さは何メートルですか」→「東京タワーの高さ」."""
    text = normalize(question).rstrip("?？。. ")
    if _JAPANESE.search(text):
        trimmed = _JA_TAIL.sub("", text)
        trimmed = _JA_DANGLING.sub("", trimmed)  # 「梅雨がみられるのは」→「梅雨がみられる」
        return trimmed if len(trimmed) >= 2 else text
    return _EN_QUESTION_HEAD.sub("", text) or text


@lru_cache(maxsize=1)
def asking_words() -> frozenset[str]:
    """Words that say what is asked rather than what it is about: request words and element cue words."""
    text = read_text(resources.files(__package__).joinpath("request_words.txt"))
    words = {normalize(line) for line in text.splitlines() if line.strip() and not line.startswith("#")}
    for cues in element_cues().values():
        words |= {cue.strip() for cue in cues.question if cue.strip() and " " not in cue.strip()}
    return frozenset(words)


def _key_terms(user_query: str) -> tuple[str, ...]:
    """The question's content terms, question words cut out wherever they stand.

    A question word inside a run of kanji is still a question word: 「党員何人」 is 党員 plus 何人, and 「党員何人」
    as a key term would be reported missing (no passage says it) and sent searching for again.
    """
    found = terms(without_question_words(user_query))
    return tuple(t for t in found if t not in asking_words()) or tuple(found) or tuple(terms(user_query))


def profile_question(user_query: str) -> QuestionProfile:
    """Analyse the question once per step."""
    normalized = normalize(user_query)
    japanese = bool(_JAPANESE.search(normalized))
    # A bigram that straddles a particle (「雨が」「の期」) matches how a sentence is phrased, not what it is
    # about: coverage counts the question's content alone (phrasing has its own, smaller weight).
    all_tokens = tuple(tokenize(user_query))
    tokens = [t for t in all_tokens if not is_function_token(t)]
    content = frozenset(t for t in tokens if not _HIRAGANA_CHAR.search(t)) or frozenset(tokens)
    # Element cues are read after an English wh-head: the "when" of "When was it built?" asks for a date,
    # not for the conditions a "when" clause would.
    body = normalized if japanese else _EN_QUESTION_HEAD.sub("", normalized.rstrip("?. "))
    required = tuple(name for name, cues in element_cues().items() if any(cue in body for cue in cues.question))
    padded = normalized + " "  # so an English cue written with a trailing space ("when ") matches at the end
    answer_types = tuple(
        name for name, cues in answer_type_cues().items() if any(cue in padded for cue in cues.question)
    )
    return QuestionProfile(
        text=user_query,
        normalized=normalized,
        japanese=japanese,
        key_terms=_key_terms(user_query),
        content_tokens=content,
        phrase=search_phrase(user_query),
        stripped=without_question_words(user_query),
        required=required,
        tokens=all_tokens,
        answer_types=answer_types,
    )
