"""The `reasoning` action (seed 002 §4.3 ReasoningTool): answer from the gathered sources, with citations.

`gather` collects what a reasoning step may use: the evidence of the searches it depends on
(transitively; a step with no dependencies uses everything gathered so far), the outputs of the
earlier steps, and what the user supplied. The embedded engine's answer is extractive: the sentences
that cover the most of the question's weighted terms, at least one from each search it depends on
when that search found something relevant, each followed by its citation ([S1] for a document,
[U1] for the user's words). Its self-evaluation is the share of the question's term weight the chosen
sentences cover.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contracts.grace import ConfidenceScore, Evidence, GraceState, PlanStep, Thresholds, UserInput
from graphs.chunked import Pacer
from graphs.config_files import GraceConfig
from graphs.context import Checkpoint
from graphs.grace.complexity import is_japanese
from graphs.grace.confidence import ScoredText, measure, score_step
from graphs.grace.search_results import as_scored
from graphs.grace.wording import say
from graphs.text.near_duplicates import is_near_duplicate
from graphs.text.normalize import normalize
from graphs.text.tokenize import is_function_token, terms, tokenize, tokenize_normalized

MAX_SENTENCE_CHARS = 400
MIN_SENTENCE_CHARS = 4
ANSWER_NEAR_DUP_THRESHOLD = 0.8
"""Two answer sentences at or above this shingle Jaccard say the same thing: only the first is kept.

The rule is `graphs.text.near_duplicates` (the one definition of text near-duplicates); this is GRACE's threshold.
"""
SUPPORT_SHARE = 0.5
"""A source that covers this share of the question's term weight corroborates the answer."""
CHUNK_CHARS = 20_000
"""Characters of text processed between two checkpoints (a few ms of CPU): the answer yields and meets the deadline."""
_SENTENCE_END = re.compile(r"[。！？!?\n]|[.;](?=\s)")
"""What ends a sentence: 。！？!? or a newline, or . ; before whitespace (the character stays with its sentence)."""


@dataclass(frozen=True)
class Material:
    """Everything one reasoning step may draw on."""

    evidence: list[Evidence]
    user_inputs: list[UserInput]
    context: list[tuple[int, str]]
    groups: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Answer:
    """An answer and what it rests on: the evidence and user inputs it cites, and its self-evaluation.

    `support` is the evidence confidence is measured on: the cited sources plus, for the extractive
    answer, other sources that cover at least half of the question's term weight (they corroborate
    what the answer says even when one sentence was enough to say it).
    """

    text: str
    cited: list[Evidence]
    cited_inputs: list[UserInput]
    self_eval: float
    support: list[Evidence] = field(default_factory=list)


def ancestors(step: PlanStep, steps_by_id: dict[int, PlanStep]) -> list[int]:
    """Every step `step` depends on, directly or through other steps, nearest first."""
    found: list[int] = []
    frontier = list(step.depends_on)
    while frontier:
        current = frontier.pop(0)
        if current in found:
            continue
        found.append(current)
        if current in steps_by_id:
            frontier += steps_by_id[current].depends_on
    return found


def gather(step: PlanStep, session: GraceState) -> Material:
    """The evidence, user inputs and earlier outputs a reasoning step uses."""
    by_id = {s.step_id: s for s in session.plan.steps}
    results = {r.step_id: r for r in session.results if r.status == "success"}
    upstream = ancestors(step, by_id) if step.depends_on else [s.step_id for s in session.plan.steps]
    searched = [sid for sid in upstream if sid in results and results[sid].action == "rag_search"]
    evidence = [e for e in session.evidence if e.step_id in searched]
    context = [
        (sid, results[sid].output)
        for sid in upstream
        if sid in results and results[sid].action != "rag_search" and results[sid].output
    ]
    return Material(evidence=evidence, user_inputs=list(session.user_inputs), context=context, groups=searched)


@dataclass(frozen=True, eq=False)
class _Sentence:
    text: str
    mentions: frozenset[str]
    weight: float
    origin: Evidence | UserInput
    group: int | None


def _sentences(text: str) -> list[str]:
    """The text cut after each sentence end, each piece stripped; pieces under `MIN_SENTENCE_CHARS` dropped.

    Cut where each end matches rather than with `re.split` on lookbehinds, which tries them at every
    character and cost twice as much; stripping makes the two the same (a break's whitespace and newlines
    end up at a piece's edge either way).
    """
    found: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(text):
        piece = text[start : end.end()].strip()
        start = end.end()
        if len(piece) >= MIN_SENTENCE_CHARS:
            found.append(piece[:MAX_SENTENCE_CHARS])
    piece = text[start:].strip()
    if len(piece) >= MIN_SENTENCE_CHARS:
        found.append(piece[:MAX_SENTENCE_CHARS])
    return found


def query_terms(query: str) -> list[str]:
    """The content terms of the question (question words and particles dropped)."""
    return terms(query) or [t for t in tokenize(query) if not is_function_token(t)]


SCAN_PER_LENGTH = 16
"""Japanese terms checked one by one (a C substring search each) before a set of slices per term length is cheaper."""


class TermMatcher:
    """Which of the question's terms a text mentions, in time linear in the text, whatever the question's length.

    Words are whole tokens: one set intersection with the text's tokens. Japanese terms are substrings
    (高 in 高さ): with few of them, one substring search each; with many, the text's substrings of each
    length some term has, intersected with the terms of that length. Either way the work per text is
    bounded by its length times min(terms / `SCAN_PER_LENGTH`, distinct term lengths), and a question of
    n characters has fewer than sqrt(2n) distinct term lengths.
    """

    def __init__(self, wanted: Sequence[str]) -> None:
        self.wanted = list(wanted)
        japanese = sorted({t for t in wanted if is_japanese(t)})
        self.words = frozenset(t for t in wanted if not is_japanese(t))
        self.japanese = japanese
        self.by_length: dict[int, frozenset[str]] = {
            n: frozenset(t for t in japanese if len(t) == n) for n in {len(t) for t in japanese}
        }
        self.scan_each = len(japanese) <= SCAN_PER_LENGTH * len(self.by_length)

    def mentions(self, text: str) -> frozenset[str]:
        """The terms `text` mentions: Japanese terms as substrings, words as whole tokens."""
        normalized = normalize(text)
        found = set(self.words.intersection(tokenize_normalized(normalized))) if self.words else set()
        if self.scan_each:
            found.update(t for t in self.japanese if t in normalized)
        else:
            for n, group in self.by_length.items():
                found.update(group.intersection(normalized[i : i + n] for i in range(len(normalized) - n + 1)))
        return frozenset(found)


async def _candidates(material: Material, matcher: TermMatcher, pacer: Pacer) -> list[_Sentence]:
    found: list[_Sentence] = []
    for user_input in material.user_inputs:
        for s in _sentences(user_input.text):
            found.append(_Sentence(s, matcher.mentions(s), 1.0, user_input, None))
            await pacer.tick(len(s))
    for item in material.evidence:
        weight = 0.75 if item.score is None else 0.5 + 0.5 * max(0.0, min(1.0, item.score))
        for s in _sentences(item.snippet):
            found.append(_Sentence(s, matcher.mentions(s), weight, item, item.step_id))
            await pacer.tick(len(s))
    return found


def _term_weights(wanted: Sequence[str], candidates: Sequence[_Sentence]) -> dict[str, float]:
    """Query terms weighted by rarity among the candidate sentences (a term every sentence has says little)."""
    total = len(candidates) or 1
    having = Counter(t for c in candidates for t in c.mentions)
    return {t: math.log(1 + total / (1 + having[t])) for t in wanted}


async def extractive_answer(
    query: str, material: Material, *, max_sentences: int, checkpoint: Checkpoint | None = None
) -> Answer:
    """The embedded engine's answer: the best-covering sentences of the sources, each with its citation.

    `checkpoint` (the request's `AgentContext.checkpoint`) is awaited every `CHUNK_CHARS` characters of
    work, so a long input yields to the event loop and stops at the request's deadline.
    """
    matcher = TermMatcher(query_terms(query))
    pacer = Pacer(checkpoint, CHUNK_CHARS)
    candidates = await _candidates(material, matcher, pacer)
    weights = _term_weights(matcher.wanted, candidates)
    total_weight = sum(weights.values())
    nothing = Answer(text=say("no_evidence", query), cited=[], cited_inputs=[], self_eval=0.0)
    if not candidates or total_weight == 0:
        return nothing
    chosen, covered = await _choose(candidates, material.groups, weights, max_sentences, pacer)
    if not chosen:
        return nothing
    answer = _cite(query, chosen, round(sum(weights[t] for t in covered) / total_weight, 4))
    corroborating = await _corroborating(material, answer, matcher, weights, total_weight, pacer)
    return Answer(
        text=answer.text,
        cited=answer.cited,
        cited_inputs=answer.cited_inputs,
        self_eval=answer.self_eval,
        support=[*answer.cited, *corroborating],
    )


async def _choose(
    candidates: Sequence[_Sentence],
    groups: Sequence[int],
    weights: dict[str, float],
    max_sentences: int,
    pacer: Pacer,
) -> tuple[list[_Sentence], set[str]]:
    """Greedy coverage: first the best sentence of each group (so every source side is heard), then the best overall.

    Returns the chosen sentences in order and the query terms they cover.
    """

    def gain(sentence: _Sentence, covered: set[str]) -> float:
        return sum(weights[t] for t in sentence.mentions - covered) * sentence.weight

    chosen: list[_Sentence] = []
    covered: set[str] = set()

    async def take(pool: Sequence[_Sentence]) -> bool:
        """Choose the pool's best sentence that adds coverage and repeats no chosen one; False when none does."""
        await pacer.tick(len(pool))
        # Each sentence's gain once (`covered` only changes on return), best first; the sort is stable.
        gains = sorted(((gain(s, covered), s) for s in pool), key=lambda scored: -scored[0])
        for value, sentence in gains:
            if value <= 0:
                return False
            await pacer.tick(len(sentence.text) * (1 + len(chosen)))
            if not any(is_near_duplicate(sentence.text, c.text, ANSWER_NEAR_DUP_THRESHOLD) for c in chosen):
                chosen.append(sentence)
                covered.update(sentence.mentions)
                return True
        return False

    for group in groups if len(groups) > 1 else []:
        if len(chosen) < max_sentences:
            await take([c for c in candidates if c.group == group and c not in chosen])
    while len(chosen) < max_sentences and await take([c for c in candidates if c not in chosen]):
        pass
    return chosen, covered


async def _corroborating(
    material: Material,
    answer: Answer,
    matcher: TermMatcher,
    weights: dict[str, float],
    total_weight: float,
    pacer: Pacer,
) -> list[Evidence]:
    """Uncited evidence that mentions enough of the query to support the answer, so confidence counts it too."""
    found: list[Evidence] = []
    for e in material.evidence:
        if (
            e not in answer.cited
            and sum(weights[t] for t in matcher.mentions(e.snippet)) >= SUPPORT_SHARE * total_weight
        ):
            found.append(e)
        await pacer.tick(len(e.snippet))
    return found


_LABEL_LIKE = re.compile(r"\[([SU][0-9]+)\]")
"""A citation label (`[S7]`, `[U1]`): in an answer, or inside a quoted sentence (a hit's own text may carry one)."""


def _unlabelled(match: re.Match[str]) -> str:
    """`[S7]` in a quote as `［S7］`: still readable, but not a citation the answer makes (it points at nothing)."""
    return f"［{match.group(1)}］"


@dataclass
class Numbering:
    """The sources and user inputs an answer cites, numbered in order of first use: `[S n]` is `cited[n - 1]`.

    The one numbering of every answer, the extractive one's and the model's, so COMPLETE's `sources` line
    up with the labels in its text whoever wrote it.
    """

    cited: list[Evidence] = field(default_factory=list)
    inputs: list[UserInput] = field(default_factory=list)

    def label(self, origin: Evidence | UserInput) -> str:
        """`S n` / `U n` for `origin`, numbering it next when it is cited for the first time."""
        if isinstance(origin, UserInput):
            if origin not in self.inputs:
                self.inputs.append(origin)
            return f"U{self.inputs.index(origin) + 1}"
        if origin not in self.cited:
            self.cited.append(origin)
        return f"S{self.cited.index(origin) + 1}"

    def relabel(self, text: str, shown: Mapping[str, Evidence | UserInput]) -> str:
        """`text` with each label naming one of `shown` renumbered in order of first use, and any other removed.

        A label the writer (a model) used names what it was shown under that label: it is cited, whether or
        not it was also listed. A label naming nothing shown points at nothing, so it goes.
        """
        return _LABEL_LIKE.sub(lambda m: f"[{self.label(shown[m.group(1)])}]" if m.group(1) in shown else "", text)


def _cite(query: str, chosen: list[_Sentence], self_eval: float) -> Answer:
    """Number the cited sources in order of first use and append the label to each sentence."""
    numbering = Numbering()
    parts = [f"{_LABEL_LIKE.sub(_unlabelled, s.text)}[{numbering.label(s.origin)}]" for s in chosen]
    joiner = "" if is_japanese(query) else " "
    cited = numbering.cited
    return Answer(
        text=joiner.join(parts), cited=cited, cited_inputs=numbering.inputs, self_eval=self_eval, support=cited
    )


def answer_confidence(answer: Answer, config: GraceConfig, thresholds: Thresholds) -> ConfidenceScore:
    """A reasoning step's confidence: its sources (the user's words count as fully relevant) and self-evaluation."""
    sources = as_scored(answer.support or answer.cited) + [
        ScoredText(document_id=f"user-input-{u.step_id}", text=u.text, score=1.0) for u in answer.cited_inputs
    ]
    return score_step(measure(sources, self_eval=answer.self_eval), "reasoning", config, thresholds)
