"""Choose the minimal strongest evidence set and shape it for COMPLETE (seed 003 §2.3).

Greedy cover: take the most relevant candidate, then add another only if it covers question
tokens the set does not yet cover while being relevant in its own right, supplies a needed element
the set lacks, or is nearly as relevant as the best (a genuine tie the evaluator cannot break). The
search side's own best hit for the question's wording is a second judgement: it breaks near-ties, is
kept beside a rules' best it disagrees with, and a disagreement widens what counts as a tie (one
snippet where both agree, more where they do not). Evidence is grouped per document with sorted
pages; every id, page and snippet comes from the candidate pool, i.e. from the caller's own
`search_history`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from contracts.librarian import EvidenceItem, SearchRound
from graphs.librarian.assessment import Assessment, ScoredCandidate
from graphs.librarian.candidates import Location, hit_query, location, only_query
from graphs.librarian.question import QuestionProfile
from graphs.text.contradiction import find_contradiction
from graphs.text.tokenize import tokenize

MIN_GAIN = 0.15
"""A second snippet must add at least this share of the question's (weighted) tokens."""
SAME_PASSAGE = 0.5
"""Token Jaccard at which two snippets count as versions of one passage (for disagreement, not merging)."""
DISAGREE_SHARE = 0.5
"""A source at least this relevant that contradicts the selection is kept too, so the disagreement shows."""
GAIN_SHARE = 0.6
"""A candidate kept for the question words it adds must also score at least this share of the best. One that
adds words but is far less relevant mentions them in passing rather than answering the other part of the question:
on the tuning slices (`bench.librarian_quality --slice dev` and `--slice dev2`, 2,100 questions) the 145 snippets
kept for their words below 0.8 of the best held the gold paragraph 3 times, none of the 63 below 0.5."""
TIE_SHARE = 0.84
"""A candidate scoring at least this share of the best is kept too (up to `max_evidence`): the rules cannot tell
them apart reliably, and returning both costs less than returning the wrong one. This is the share when the search
side's own best for the question is the rules' best too (or unknown); see `DISPUTED_TIE_SHARE`.

The operating point spends the snippet budget (issue 13: at most 1.5 per question; 1.46 on each tuning slice, as
the untouched `final` slice ran about 0.01 higher): replaying the selection over recorded dev + dev2 loops
(`bench.librarian_selection_sweep`), the tie shares, `SEARCH_VOTE`, `SECOND_OPINION_SHARE` and `GAIN_SHARE` were
swept and the point chosen that maximises the worse of the two slices' margins over one-shot BM25 R@5 within that
budget. 0.84 (from 0.85) keeps one more gold on dev at 1.459 / 1.451 snippets (dev / dev2); lower shares, a smaller
vote or looser words-added and second-opinion shares cost 0.01-0.05 snippets per question for at most one find
per 40 snippets, and dev2 finds no further gold above 0.78 of an agreed best."""
DISPUTED_TIE_SHARE = 0.76
"""The tie share when the search side's own best for the question (`question_query_best`) is not the rules' best.
Two judgements that disagree are less sure than two that agree: on the tuning slices (`bench.librarian_quality
--slice dev` and `--slice dev2`, 2,100 questions) a runner-up at 0.85-0.9 of an agreed best held the gold paragraph
in 2% of cases, at 0.78-0.82 in 1%; beside a disputed best, runners-up down to 0.74 still held it in 3-10%. Each
share is where a further snippet stops paying for itself (about one find in 25), so the snippets go where the
doubt is: on dev + dev2 this cut the mean from 1.47 to 1.44 snippets at about the same recall (581 -> 579 and
1,450 -> 1,451 found). `--slice final` is measured once per tuning round, never tuned on."""
SECOND_OPINION_SHARE = 0.6
"""When they disagree, the search side's own best is kept beside the rules' best if it scores at least this share
of it (before the ties, so `max_evidence` never crowds it out): the two judgements fail on different questions."""
SEARCH_VOTE = 0.02
"""What the search side's own best for the question adds to its score when choosing: a vote that decides a near-tie
between the rules' candidates (relevance is about 1.0 for a passage that covers the whole question)."""


def question_query_best(profile: QuestionProfile, history: Sequence[SearchRound]) -> Location | None:
    """Where the search side's best hit stands for the query closest to the whole question, if one was sent.

    The search side ranks with the whole question's wording (BM25 over every bigram, kana included), the rules
    with its content and the pool; where both pick the same passage the choice is safer than where they differ.
    The query is the `queries_text` entry with hits whose tokens hold the largest share of the question's tokens:
    the question minus its question words on a BM25 side (the rules' own first SEARCH sends it), the key terms on
    a side that matches whole terms and finds no verbatim question. A hit belongs to a query by `metadata.query`,
    or because it was the round's only query. Ties go to the earliest query.
    """
    wanted = set(tokenize(profile.text))
    if not wanted:
        return None
    best_share, best_hit = 0.0, None
    for round_ in history:
        only = only_query(round_)
        first_hits: dict[str, Location] = {}
        for hit in round_.results:
            query = hit_query(hit, only)
            if query is not None and query in round_.queries_text:
                first_hits.setdefault(query, location(hit))
        for query in round_.queries_text:
            share = len(wanted & set(tokenize(query))) / len(wanted)
            if share > best_share and query in first_hits:
                best_share, best_hit = share, first_hits[query]
    return best_hit


def _located_at(usable: list[ScoredCandidate], place: Location | None) -> ScoredCandidate | None:
    """The usable candidate standing at `place` (its own place or a merged duplicate's)."""
    if place is None:
        return None
    for scored in usable:
        candidate = scored.candidate
        if place == (candidate.document_id, candidate.page, candidate.chunk_id) or place in candidate.merged:
            return scored
    return None


def select_minimal(
    profile: QuestionProfile,
    assessment: Assessment,
    *,
    max_evidence: int,
    history: Sequence[SearchRound] = (),
) -> list[ScoredCandidate]:
    """The fewest usable candidates that together cover the question and its needed elements.

    With the search `history`, the search side's own best for the question (`question_query_best`) votes: it
    decides near-ties, is kept beside a best it disagrees with, and how close a tie must be depends on whether
    the two agree.
    """
    if not assessment.usable:
        return []
    opening = _opening(profile, assessment, history, max_evidence=max_evidence)
    weights = assessment.token_weights
    total = sum(weights.values()) or 1.0
    selected = list(opening.selected)
    covered = set().union(*(s.covered_tokens for s in selected))
    elements = set().union(*(s.elements for s in selected))
    for scored, share in opening.ranked[1:]:
        if len(selected) >= max_evidence:
            break
        if any(scored is s for s in selected):
            continue
        gain = sum(weights[t] for t in scored.covered_tokens - covered) / total
        adds_words = gain >= MIN_GAIN and share >= GAIN_SHARE
        new_element = any(c in scored.elements and c not in elements for c in profile.required)
        if adds_words or new_element or share >= opening.tie_share:
            selected.append(scored)
            covered |= scored.covered_tokens
            elements |= scored.elements
    return _with_disagreeing(selected, [s for s, _ in opening.ranked], max_evidence=max_evidence)


@dataclass(frozen=True)
class _Opening:
    """The usable candidates in choosing order with their share of the best, the first choices, the tie share."""

    ranked: list[tuple[ScoredCandidate, float]]
    selected: list[ScoredCandidate]
    tie_share: float


def _opening(
    profile: QuestionProfile, assessment: Assessment, history: Sequence[SearchRound], *, max_evidence: int
) -> _Opening:
    """The best candidate, plus the search side's own best when the two judgements disagree."""
    usable = assessment.usable
    pick = _located_at(usable, question_query_best(profile, history)) if history else None
    scores = [s.relevance + (SEARCH_VOTE if s is pick else 0.0) for s in usable]
    # Stable: equal scores keep the rules' order (first seen), so the outcome depends on the input alone.
    order = sorted(range(len(usable)), key=lambda i: -scores[i])
    top = scores[order[0]]
    ranked = [(usable[i], scores[i] / top if top > 0 else 1.0) for i in order]
    best = ranked[0][0]
    if pick is None or pick is best:
        return _Opening(ranked=ranked, selected=[best], tie_share=TIE_SHARE)
    second = [s for s, share in ranked if s is pick and share >= SECOND_OPINION_SHARE]
    return _Opening(ranked=ranked, selected=[best, *second][:max_evidence], tie_share=DISPUTED_TIE_SHARE)


def _with_disagreeing(
    selected: list[ScoredCandidate], usable: list[ScoredCandidate], *, max_evidence: int
) -> list[ScoredCandidate]:
    """`selected` plus each strong source that contradicts it, while there is room.

    The caller must see that its sources disagree (the notes name them), not get one side silently.
    """
    best = usable[0]
    for scored in usable[1:]:
        if len(selected) >= max_evidence:
            break
        if scored in selected or scored.relevance < DISAGREE_SHARE * best.relevance:
            continue
        if any(_versions_disagree(s, scored) for s in selected):
            selected.append(scored)
    return selected


def _versions_disagree(first: ScoredCandidate, second: ScoredCandidate) -> bool:
    """Two versions of the same passage (most tokens shared) that state different figures or claims.

    Different passages naturally mention different numbers; only versions of one statement disagree.
    """
    a, b = first.candidate.tokens, second.candidate.tokens
    if not a or not b or len(a & b) / len(a | b) < SAME_PASSAGE:
        return False
    return find_contradiction(first.candidate.snippet, second.candidate.snippet) is not None


def disagreements(selected: list[ScoredCandidate]) -> list[str]:
    """How the selected sources contradict each other, one line per pair ("tower p.3 vs blog: 333 vs 334")."""
    lines = []
    for i, first in enumerate(selected):
        for second in selected[i + 1 :]:
            if not _versions_disagree(first, second):
                continue
            found = find_contradiction(first.candidate.snippet, second.candidate.snippet)
            if found is not None:
                lines.append(f"{_where(first)} vs {_where(second)}: {found.detail}")
    return lines


def _where(scored: ScoredCandidate) -> str:
    page = scored.candidate.page
    return scored.candidate.document_id + (f" p.{page}" if page is not None else "")


def _why(profile: QuestionProfile, scored: ScoredCandidate) -> str:
    terms = [t for t in profile.key_terms if t in scored.candidate.normalized][:4]
    found_by = len(scored.candidate.queries) or scored.candidate.occurrences
    parts = [f"covers {round(scored.coverage * 100)}% of the question's key content"]
    if terms:
        parts.append(f"mentions {', '.join(terms)}")
    if scored.elements & set(profile.required):
        parts.append(f"supplies {', '.join(sorted(scored.elements & set(profile.required)))}")
    parts.append(f"found by {found_by} {'query' if found_by == 1 else 'queries'}")
    return "; ".join(parts)


def _model_why(members: list[ScoredCandidate], reasons: dict[str, str]) -> str:
    """The model's reasons for a document's snippets, each once, in page order."""
    return "; ".join(dict.fromkeys(r for m in members if (r := reasons.get(m.candidate.cid, ""))))


def group_evidence(
    profile: QuestionProfile, selected: list[ScoredCandidate], *, reasons: dict[str, str] | None = None
) -> list[EvidenceItem]:
    """One EvidenceItem per document, in order of its best snippet's relevance.

    `why_relevant` is the rules' description of the best snippet, or, given `reasons` (the model's,
    by candidate id), the model's reasons for the document's snippets, each once.
    """
    groups: OrderedDict[str, list[ScoredCandidate]] = OrderedDict()
    for scored in selected:
        groups.setdefault(scored.candidate.document_id, []).append(scored)
    items = []
    for document_id, members in groups.items():
        pages = sorted({p for m in members for p in m.candidate.pages})
        # Snippets in page order, so they read alongside `pages` (pageless snippets last).
        members.sort(key=lambda m: (m.candidate.page is None, m.candidate.page or 0))
        best = max(members, key=lambda m: m.relevance)
        items.append(
            EvidenceItem(
                document_id=document_id,
                pages=pages,
                snippets=[m.candidate.snippet for m in members],
                score=round(max(m.relevance for m in members), 4),
                why_relevant=_why(profile, best) if reasons is None else _model_why(members, reasons),
            )
        )
    return items


def coverage_notes(profile: QuestionProfile, assessment: Assessment, selected: list[ScoredCandidate]) -> str:
    """What the selected evidence covers and what remains uncertain, in one or two sentences."""
    # Key terms are normalised (case-folded): compare them with the normalised snippets ("newton" is in
    # "Newton's second law").
    covered = [t for t in profile.key_terms if any(t in s.candidate.normalized for s in selected)]
    uncovered = [t for t in profile.key_terms if t not in covered and len(t) >= 2]
    supplied = set().union(*(s.elements for s in selected)) if selected else set()
    elements = [f"{category} for {profile.phrase}" for category in profile.required if category not in supplied]
    notes = [f"Covered: {', '.join(covered) or 'none of the key terms verbatim'}."]
    if uncovered:
        notes.append(f"Not found in the evidence: {', '.join(uncovered)}.")
    if elements:
        notes.append(f"Uncertain: {'; '.join(elements)}.")
    conflicts = disagreements(selected)
    if conflicts:
        notes.append(f"The sources disagree ({'; '.join(conflicts[:3])}): every side is kept.")
    if not assessment.sufficient:
        notes.append("The search stopped before the evidence was judged sufficient.")
    return " ".join(notes)
