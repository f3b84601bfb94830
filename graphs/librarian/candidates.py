"""The deduplicated candidate pool, re-derived from `search_history` on every call (seed 003 §2.3).

Exact duplicates (same document/page/chunk, or the same normalised text) and near-duplicates
(`graphs.text.near_duplicates`: character-shingle Jaccard at or above `LIBRARIAN_NEAR_DUP_THRESHOLD`)
collapse into one candidate that keeps the best-scored copy and every query and round that found it.
Near-duplicates that disagree (other figures, opposite claims, other names) never collapse. At one location,
texts collapse unless they are versions of one passage (`same_passage`, which there lets an excerpt stand for
the whole chunk) that contradict each other (other figures, opposite claims: what the notes name): the same
chunk, or an excerpt of it, returned with other figures is another version, a candidate of its own, while
agreeing excerpts, excerpts of other parts, or a typo fixed, are the same source.
The pool is rebuilt rather than stored in state: it is deterministic, so every instance derives the
same pool. Building it is bulk numpy work plus one walk over the hits, in chunks between which an
async caller checks the request's deadline (`build_pool_async`), so no history blocks the event loop.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from contracts.librarian import SearchHit, SearchRound
from graphs.chunked import Chunked, finish, finish_async
from graphs.text.contradiction import Contradiction, find_contradiction
from graphs.text.near_duplicates import NearDuplicates, find_near_duplicates
from graphs.text.normalize import normalize, normalize_many
from graphs.text.tokenize import tokenize_normalized

Location = tuple[str, int | None, str | None]
"""Where a hit stands: document, page, chunk id."""

RRF_K = 10
"""Reciprocal-rank-fusion constant: small, because result lists are short (top-k per query)."""
SAME_PASSAGE = 0.5
"""Token Jaccard at which two snippets count as versions of one passage (whose contradictions the notes name)."""


@dataclass
class Candidate:
    """One distinct piece of evidence and everything known about how it was found."""

    cid: str
    document_id: str
    page: int | None
    chunk_id: str | None
    snippet: str
    best_score: float | None
    fused_rank: float = 0.0
    norm_score: float = 0.0
    queries: list[str] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    occurrences: int = 0
    merged: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    normalized: str = ""
    _tokens: frozenset[str] | None = field(default=None, repr=False, compare=False)

    @property
    def tokens(self) -> frozenset[str]:
        """Every `tokenize` token of the snippet, built on first use (scoring asks about the question's tokens only)."""
        if self._tokens is None:
            self._tokens = frozenset(tokenize_normalized(self.normalized))
        return self._tokens

    @property
    def location(self) -> Location:
        """Where this evidence stands: its document, page and chunk (its merged duplicates' are in `merged`)."""
        return self.document_id, self.page, self.chunk_id

    def at_one_place_with(self, other: Candidate) -> bool:
        """Whether both stand at one identified place (a page or a chunk id given): one chunk read twice."""
        return (self.page is not None or bool(self.chunk_id)) and self.location == other.location

    @property
    def pages(self) -> list[int]:
        """Every page this evidence (and its merged duplicates from the same document) stands on."""
        found = {self.page} if self.page is not None else set()
        found.update(p for d, p, _ in self.merged if d == self.document_id and p is not None)
        return sorted(found)


@dataclass
class CandidatePool:
    """Candidates in first-seen order, and what de-duplicating them cost."""

    near_dup_threshold: float
    candidates: list[Candidate] = field(default_factory=list)
    near_dup_compared: int = 0
    """Snippet pairs the near-duplicate search compared (bounded by NEAR_DUP_MAX_COMPARED per snippet)."""

    def by_id(self) -> dict[str, Candidate]:
        """Candidates keyed by their pool id (`c1`, `c2`, …)."""
        return {c.cid: c for c in self.candidates}


_NAME = re.compile(r"[\u30a1-\u30fa\u30fc]{2,}|\b[A-Z][a-zA-Z]+\b")


def _names(text: str) -> set[str]:
    """Name-like words: katakana runs and capitalised Latin words (a proxy for named entities)."""
    return {m.group() for m in _NAME.finditer(text)}


def same_passage(a: frozenset[str], b: frozenset[str], *, one_place: bool = False) -> bool:
    """Whether two non-empty token sets overlap enough to be versions of one passage (Jaccard ≥ `SAME_PASSAGE`).

    |a ∩ b| / |a ∪ b| is at most the smaller size over the larger (rounding keeps that order), so a pair of
    very different lengths is settled without the intersection; the union's size is the sizes' sum less the
    intersection's, without building it. Empty sets are never the same passage.

    Texts read at `one_place` (one document, page and chunk) may be an excerpt of the chunk and the whole of
    it, whose sizes differ however alike they are: there, the smaller set mostly within the larger
    (|a ∩ b| / min ≥ `SAME_PASSAGE`) is one passage, so an excerpt that states another figure than the whole
    chunk is a version that contradicts it. Two excerpts of other parts of a chunk still share too little.
    """
    if not a or not b:
        return False
    if one_place:
        return len(a & b) / min(len(a), len(b)) >= SAME_PASSAGE
    if min(len(a), len(b)) / max(len(a), len(b)) < SAME_PASSAGE:
        return False
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared) >= SAME_PASSAGE


def versions_contradiction(
    text: str, normalized: str, tokens: frozenset[str], other: Candidate, *, one_place: bool
) -> Contradiction | None:
    """How a text and a candidate, versions of one passage (`same_passage`), contradict each other, or None.

    At one place, a text that is whole sentences of the other, word for word (`stands_in`), is that chunk,
    whatever its other sentences say: comparing the excerpt with them would read two statements of one chunk
    as a contradiction between two sources.
    """
    if not same_passage(tokens, other.tokens, one_place=one_place):
        return None
    if one_place and (stands_in(normalized, other.normalized) or stands_in(other.normalized, normalized)):
        return None
    return find_contradiction(text, other.snippet)


SENTENCE_ENDS = frozenset("。.!?")
"""Where a sentence ends in normalised text (NFKC makes ．！？ these)."""


def stands_in(excerpt: str, text: str) -> bool:
    """Whether `excerpt` is whole sentences of `text`, word for word: found in it from a sentence's start to an end.

    A piece cut short of its sentence is not: `この薬は大人には安全である` stands in `…安全である。` but not in
    `この薬は大人には安全であるとは言えない。`, which says the opposite. Both texts are normalised (one space
    between words, no space at either end).
    """
    if not excerpt:
        return False
    at = text.find(excerpt)
    while at != -1:
        end = at + len(excerpt)
        starts = at == 0 or text[at - 1] in SENTENCE_ENDS or text[at - 1] == " "
        ends = end == len(text) or excerpt[-1] in SENTENCE_ENDS or text[end] in SENTENCE_ENDS or text[end] == " "
        if starts and ends:
            return True
        at = text.find(excerpt, at + 1)
    return False


def disagree(first: str, second: str) -> bool:
    """Whether two similar texts say different things: other figures, opposite polarity, or other names."""
    if find_contradiction(first, second) is not None:
        return True
    names_a, names_b = _names(first), _names(second)
    return bool(names_a - names_b) and bool(names_b - names_a)  # a name replaced, not merely added


def hit_query(hit: SearchHit, only: str | None) -> str | None:
    """Which query found a hit: `metadata.query` when the caller says, else the round's only query (`only`)."""
    query = hit.metadata.get("query") if hit.metadata else None
    if isinstance(query, str) and query:
        return query
    return only


def only_query(round_: SearchRound) -> str | None:
    """The round's query when it ran exactly one, else None."""
    issued = [*round_.queries_text, *round_.queries_vector]
    return issued[0] if len(issued) == 1 else None


class _Placed(NamedTuple):
    """One hit of the history with what fusion needs: its round, its rank in its list, its query; and its location."""

    hit: SearchHit
    round_index: int
    rank: int
    query: str | None
    top_score: float | None
    location: Location
    locates: bool


def _placed_hits(history: list[SearchRound]) -> list[_Placed]:
    """Every hit in history order, with its rank in its ranked list.

    Rank for fusion is the hit's position among the hits of the same query (or of the round when
    the caller does not say which query found it), so a hit near the top of any list counts most.
    """
    placed: list[_Placed] = []
    for round_index, round_ in enumerate(history):
        # Hits are grouped into ranked lists: one per query when the caller says which query found
        # a hit (`metadata.query`); otherwise a rising score marks the start of the next list.
        lists: list[list[tuple[SearchHit, str | None]]] = []
        previous: tuple[str | None, float | None] | None = None
        only = only_query(round_)
        for hit in round_.results:
            query = hit_query(hit, only)
            new_list = previous is None or query != previous[0]
            if query is None and previous is not None and hit.score is not None and previous[1] is not None:
                new_list = new_list or hit.score > previous[1]
            if new_list:
                lists.append([])
            lists[-1].append((hit, query))
            previous = (query, hit.score)
        for ranked in lists:
            scores = [h.score for h, _ in ranked if h.score is not None and h.score > 0]
            top = max(scores) if scores else None
            # `location(hit)` and `_locates(hit)` written out: this runs once per hit of the history.
            placed += [
                _Placed(
                    hit,
                    round_index,
                    rank,
                    query,
                    top,
                    (hit.document_id, hit.page, hit.chunk_id),
                    hit.page is not None or bool(hit.chunk_id),
                )
                for rank, (hit, query) in enumerate(ranked, 1)
            ]
    return placed


def location(hit: SearchHit) -> Location:
    """Where a hit stands: its document, page and chunk."""
    return (hit.document_id, hit.page, hit.chunk_id)


def _locates(hit: SearchHit) -> bool:
    """Whether a hit's location identifies it (a page or a chunk id), so a later hit there is the same one."""
    return hit.page is not None or bool(hit.chunk_id)


def build_pool(history: list[SearchRound], *, near_dup_threshold: float) -> CandidatePool:
    """Fold every round of the history into one deduplicated pool, at once (tests and sync callers)."""
    return finish(pool_steps(history, near_dup_threshold=near_dup_threshold))


async def build_pool_async(
    history: list[SearchRound], *, near_dup_threshold: float, checkpoint: Callable[[], Awaitable[None]]
) -> CandidatePool:
    """`build_pool` on the event loop, awaiting `checkpoint` (the request's deadline) between chunks."""
    return await finish_async(pool_steps(history, near_dup_threshold=near_dup_threshold), checkpoint)


def pool_steps(history: list[SearchRound], *, near_dup_threshold: float) -> Chunked[CandidatePool]:
    """Fold every round of the history into one deduplicated pool, in bounded chunks.

    A hit joins an earlier candidate when it stands at the same location (document, page, chunk),
    has the same normalised text, or is a near-duplicate (`graphs.text.near_duplicates`) of the text
    that created a candidate and does not disagree with that candidate's snippet; the first such
    candidate wins. Which texts are near-duplicates of which does not depend on the merging, so it is
    computed once for all the request's distinct texts, in bulk; only the merge itself walks the hits.
    """
    placed = _placed_hits(history)
    texts = yield from _text_plan(placed)
    similar = yield from find_near_duplicates(texts.distinct, near_dup_threshold)
    pool = CandidatePool(near_dup_threshold=near_dup_threshold, near_dup_compared=similar.compared)
    yield from _merge_hits(pool, placed, texts, similar)
    return pool


@dataclass
class _TextPlan:
    """Which hit's text is checked and against what, worked out before any merging.

    `normalized[i]` is hit i's normalised snippet, or None when an earlier hit had its location (it merges
    there, no text check needed); `distinct` holds each normalised text once, in first-seen order, and
    `distinct_of[i]` is the position there of the hit that first had that text.
    """

    normalized: list[str | None] = field(default_factory=list)
    distinct: list[str] = field(default_factory=list)
    distinct_of: dict[int, int] = field(default_factory=dict)


def _text_plan(placed: list[_Placed]) -> Chunked[_TextPlan]:
    """Which hits reach the text checks: those whose location no earlier hit had (or that have none).

    Of those, the first of each normalised text is the one the near-duplicate search looks at, so the
    search runs once over distinct texts instead of once per hit. Their snippets are normalised together,
    a chunk of hits at a time (`normalize_many`).
    """
    plan = _TextPlan(normalized=[None] * len(placed))
    checked: list[int] = []
    seen_locations: set[tuple[str, int | None, str | None]] = set()
    for index, entry in enumerate(placed):
        if not entry.locates or entry.location not in seen_locations:
            checked.append(index)
        seen_locations.add(entry.location)
    seen_texts: set[str] = set()
    for start in range(0, len(checked), _HITS_PER_CHUNK):
        chunk = checked[start : start + _HITS_PER_CHUNK]
        for index, folded in zip(chunk, normalize_many([placed[i].hit.snippet for i in chunk]), strict=True):
            plan.normalized[index] = folded
            if folded not in seen_texts:
                seen_texts.add(folded)
                plan.distinct_of[index] = len(plan.distinct)
                plan.distinct.append(folded)
        yield
    return plan


def _merge_hits(pool: CandidatePool, placed: list[_Placed], texts: _TextPlan, similar: NearDuplicates) -> Chunked[None]:
    """Walk the hits in history order, merging each into the first candidate it matches or opening a new one.

    Pauses after about `_HITS_PER_CHUNK` hits' worth of work (a contradiction check counts as
    `check_cost` hits, more for long texts), so a bucket of near-duplicates that disagree, or of long texts
    at one location, cannot hold the loop.
    """
    by_location: dict[tuple[str, int | None, str | None], int] = {}
    versions: dict[Location, list[int]] = {}  # the candidates standing at a location, when it has several texts
    by_text: dict[str, int] = {}
    created_by: list[int | None] = [None] * len(texts.distinct)  # the candidate each distinct text created
    normalized, distinct_of = texts.normalized, texts.distinct_of  # locals: a hot loop
    work = 0
    for index, entry in enumerate(placed):
        text, location = normalized[index], entry.location
        found = by_location.get(location) if entry.locates else None
        if found is not None:
            found, work = _at_location(pool, found, entry, by_text, versions, work)
        elif text is not None and (found := by_text.get(text)) is not None:
            _merge(pool.candidates[found], entry, text)
        elif similar.earlier[own := distinct_of[index]]:
            found, work = _near_duplicate_or_new(pool, entry, texts, own, similar, created_by, work)
        else:  # the common case: a hit like no earlier one opens its own candidate
            found = created_by[own] = len(pool.candidates)
            pool.candidates.append(_first_sighting(found, entry, texts.distinct[own]))
        by_location.setdefault(location, found)
        if text is not None:
            by_text.setdefault(text, found)
        work += 1
        if work >= _HITS_PER_CHUNK:
            work = 0
            yield


def _at_location(
    pool: CandidatePool,
    found: int,
    entry: _Placed,
    by_text: dict[str, int],
    versions: dict[Location, list[int]],
    work: int,
) -> tuple[int, int]:
    """Merge a hit into a candidate at its location, or open another version there; the candidate, the work so far.

    A hit at a known location was not normalised (`_TextPlan`): only a text that differs is looked at. It
    joins the first candidate at the location it does not contradict as a version of the same passage;
    one that contradicts every candidate there (the first `VERSIONS_COMPARED`) is a version of its own
    (`_another_version`).
    """
    candidate = pool.candidates[found]
    snippet = entry.hit.snippet
    if snippet == candidate.snippet:
        _merge(candidate, entry, None)
        return found, work
    version = normalize(snippet)
    tokens = frozenset(tokenize_normalized(version))
    here = versions.setdefault(entry.location, [found])
    for index in here[:VERSIONS_COMPARED]:
        other = pool.candidates[index]
        work += check_cost(snippet, other.snippet)
        if versions_contradiction(snippet, version, tokens, other, one_place=True) is None:
            _merge(other, entry, version)
            return index, work
    found = _another_version(pool, entry, by_text, version)
    here.append(found)
    return found, work


def check_cost(first: str, second: str) -> int:
    """What comparing two texts costs, in hits' worth of merging: it grows with their length (`_CHARS_PER_HIT`)."""
    return _DISAGREE_COST + (len(first) + len(second)) // _CHARS_PER_HIT


def _another_version(pool: CandidatePool, entry: _Placed, by_text: dict[str, int], version: str) -> int:
    """A hit at a known location that contradicts what stands there: its own candidate, or its text's.

    The same chunk read in two rounds with other figures (re-indexed between them, say) is two sources that
    disagree; merged by location, the second would vanish. Kept apart, both can be selected, and the notes
    name the disagreement.
    """
    found = by_text.get(version)
    if found is not None:
        _merge(pool.candidates[found], entry, version)
        return found
    found = by_text[version] = len(pool.candidates)
    pool.candidates.append(_first_sighting(found, entry, version))
    return found


def _near_duplicate_or_new(
    pool: CandidatePool,
    entry: _Placed,
    texts: _TextPlan,
    own: int,
    similar: NearDuplicates,
    created_by: list[int | None],
    work: int,
) -> tuple[int, int]:
    """Merge a hit whose location and text are new into an agreeing near-duplicate, or open a candidate for it.

    `own` is the hit's text among the distinct texts; returns the candidate's index and the work so far.
    """
    earlier = similar.earlier[own]
    found = None
    if earlier:
        found, work = _agreeing_near_duplicate(pool, entry.hit, earlier, created_by, work)
    if found is not None:
        _merge(pool.candidates[found], entry, texts.distinct[own])
        return found, work
    found = created_by[own] = len(pool.candidates)
    pool.candidates.append(_first_sighting(found, entry, texts.distinct[own]))
    return found, work


def _agreeing_near_duplicate(
    pool: CandidatePool, hit: SearchHit, earlier: list[int], created_by: list[int | None], work: int
) -> tuple[int | None, int]:
    """The first candidate made by a near-duplicate text that does not disagree with the hit, and the work so far.

    Texts that look alike but state different figures, opposite claims or different names are two sources
    that disagree, never one candidate: merging them would hide it.
    """
    for text_index in earlier:
        candidate_index = created_by[text_index]
        if candidate_index is None:
            continue
        work += check_cost(hit.snippet, pool.candidates[candidate_index].snippet)
        if not disagree(hit.snippet, pool.candidates[candidate_index].snippet):
            return candidate_index, work
    return None, work


def _first_sighting(index: int, entry: _Placed, normalized: str) -> Candidate:
    """A new candidate from a hit's own location and snippet, with that hit already merged into it.

    What `_merge` would record for a first sighting, written out: most hits of a request open a candidate,
    so this is the common path, and its fields are passed by position (in `Candidate`'s order), which
    halves the cost of making hundreds of them.
    """
    hit = entry.hit
    score, top = hit.score, entry.top_score
    return Candidate(
        f"c{index + 1}",  # cid
        hit.document_id,
        hit.page,
        hit.chunk_id,
        hit.snippet,
        score,  # best_score
        1.0 / (RRF_K + entry.rank),  # fused_rank
        max(0.0, min(1.0, score / top)) if score is not None and top else 0.0,  # norm_score
        [entry.query] if entry.query else [],  # queries
        [entry.round_index],  # rounds
        1,  # occurrences
        [],  # merged
        normalized,
    )


_HITS_PER_CHUNK = 512
"""Hits merged between pauses (a few milliseconds of Python)."""
_DISAGREE_COST = 16
"""A contradiction check of two short texts costs about as much as merging this many hits."""
VERSIONS_COMPARED = 8
"""Versions of one location a hit is compared with at most: each hit's checks stay bounded when every hit at a
location contradicts every other (a broken or hostile search side); a hit contradicting all of them is another."""
_CHARS_PER_HIT = 100
"""Characters of two texts compared (normalising, parsing clauses) that cost about as much as merging one hit."""


def _merge(candidate: Candidate, entry: _Placed, normalized: str | None) -> None:
    """Record one more sighting of a candidate: location, best score and snippet, rank, query, round."""
    hit = entry.hit
    location = entry.location
    if location != candidate.location and location not in candidate.merged:
        candidate.merged.append(location)
    if hit.score is not None and (candidate.best_score is None or hit.score > candidate.best_score):
        candidate.best_score = hit.score
        if location[0] == candidate.document_id and hit.snippet != candidate.snippet:
            candidate.snippet = hit.snippet
            candidate.normalized = normalized if normalized is not None else normalize(hit.snippet)
            candidate._tokens = None
    candidate.occurrences += 1
    candidate.fused_rank += 1.0 / (RRF_K + entry.rank)
    if hit.score is not None and entry.top_score:
        candidate.norm_score = max(candidate.norm_score, min(1.0, hit.score / entry.top_score))
    if entry.query and entry.query not in candidate.queries:
        candidate.queries.append(entry.query)
    if entry.round_index not in candidate.rounds:
        candidate.rounds.append(entry.round_index)
