"""The curator's deterministic merge: counters from evaluations, then ADD/UPDATE/DELETE deltas, then the size budget.

Same playbook and deltas in, same playbook out (up to `updated_at`), whoever proposed the deltas:

1. Counters: each evaluation adds one to its bullet's `helpful` or `harmful` (`neutral` changes nothing).
2. Deltas, in order. DELETE and UPDATE must name a bullet of the playbook; ADD must name a section the
   dataset allows. An ADD gets a fresh id `<section-prefix>-<nnnnn>` above the high-water mark and is
   placed after the last bullet of its section. Grow-and-refine: an ADD whose content is a near-duplicate
   (cosine ≥ threshold) of a bullet already in its section becomes an UPDATE of the most similar one it
   does not contradict, and an ADD identical to one (after normalisation) is dropped. An ADD that
   contradicts its near-duplicate (negation, opposite words, different figures: `graphs.text.contradiction`)
   is never merged into it: "Never paginate" next to "Always paginate" is a second bullet, and `notes`
   says the two disagree. An UPDATE that changes what a bullet says (a contradiction between the old and
   the new content) resets its helpful/harmful votes: they were cast for the old meaning.
3. Budget: with `max_bullets`, the lowest-confidence bullets are deleted until the playbook fits (most
   harmful, then least helpful first; bullets this merge touched last; then playbook order).

Near-duplicate here means an embedding cosine at or above `dedup_threshold` (`ACE_DEDUP_THRESHOLD`)
between an ADD and a bullet of its own section, not `graphs.text.near_duplicates` (the character-shingle
Jaccard rule the Librarian and GRACE apply to retrieved text). The notions differ on purpose: grow-and-refine
(seed 000, after the ACE paper) merges lessons that say the same thing, and with a provider embedder
"Paginate until the page is empty" and "Loop over page_index until an empty page" are one lesson though
they share few shingles; the vectors are the search's own (same embedder, same cache). Shingle Jaccard asks
whether a text is the same text re-quoted, which here is the "identical after normalisation" check.

Cost: one request may carry 20,000 bullets and hundreds of ADDs, so nothing here is quadratic in Python.
Each section an ADD goes to is embedded once (`_SectionVectors`, in chunks by search's own
`embed_chunked`), every ADD's candidates among the section's original bullets come from one matrix
product per batch of ADDs (a float32 pre-filter with a margin), and only those candidates, plus the
bullets this merge itself added or changed, get the exact cosine search uses
(`graphs.ace.search.index.cosines`), so the decisions are the ones a full re-embedding per ADD gave.
Order, identity and "identical after normalisation" are kept in dictionaries instead of list scans.
Between chunks the merge awaits its `budget`'s checkpoint (the request's `AgentContext`, as search's
index build does), so other requests are served and the request's deadline binds the merge's CPU work too.

Deltas that break the rules are skipped with a note here; the HTTP layer rejects a caller's own invalid
deltas before they get this far (`graphs.ace.checks.delta_problems`), while a model's are dropped and logged.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import msgspec
import numpy as np
import numpy.typing as npt
import structlog
from langchain_core.embeddings import Embeddings

from contracts.ace import Bullet, BulletEvaluation, DeltaContextItem, Playbook
from graphs.ace.playbook.ids import COUNTER_PATH, IdAllocator
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.search.index import cosines, embed_chunked
from graphs.chunked import Pacer
from graphs.context import UNBOUNDED, Budget, Checkpoint
from graphs.text.contradiction import find_contradiction
from graphs.text.normalize import normalize

log = structlog.get_logger(__name__)

Vector = npt.NDArray[np.float32]

PREFILTER_MARGIN = 1e-3
"""How far below the threshold a BLAS cosine may fall and still be re-scored exactly.

A float32 dot product of unit vectors is off by at most about dim × 6e-8 (3e-5 at 512 dimensions, 2e-4 at
3,072), so no bullet the exact cosine puts at or above the threshold is lost by the pre-filter."""
ADD_BATCH = 128
"""ADDs pre-filtered together (one pass over the section's rows)."""
PREFILTER_ROWS = 1_024
"""Rows per matrix product in the pre-filter (a checkpoint between)."""
CONTRADICTION_CHUNK = 64
"""Near-duplicates checked for a contradiction between checkpoints."""
NORMALIZE_CHUNK = 1_000
"""Bullet texts normalised between checkpoints."""


@dataclass
class MergeOutcome:
    """The new playbook and what happened on the way."""

    playbook: Playbook
    applied: list[DeltaContextItem] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def apply_evaluations(playbook: Playbook, evaluations: list[BulletEvaluation]) -> Playbook:
    """The playbook with one helpful/harmful vote added per evaluation (unknown ids are ignored)."""
    votes: dict[str, tuple[int, int]] = {}
    for evaluation in evaluations:
        helpful, harmful = votes.get(evaluation.bullet_id, (0, 0))
        if evaluation.tag == "helpful":
            helpful += 1
        elif evaluation.tag == "harmful":
            harmful += 1
        votes[evaluation.bullet_id] = (helpful, harmful)
    if not any(h or x for h, x in votes.values()):
        return playbook
    bullets = [
        msgspec.structs.replace(b, helpful=b.helpful + votes[b.id][0], harmful=b.harmful + votes[b.id][1])
        if b.id in votes
        else b
        for b in playbook.bullets
    ]
    return msgspec.structs.replace(playbook, bullets=bullets)


class _SectionVectors:
    """One section's original bullets as a matrix, and each ADD's pre-filtered candidate rows in it."""

    def __init__(self, ids: list[str], rows: npt.NDArray[np.float32], norms: npt.NDArray[np.float32]) -> None:
        self.ids = ids
        self.rows = rows
        self.norms = norms
        """The rows' float32 norms, as `np.linalg.norm` gives them (the exact cosine divides by these)."""
        self.candidates: dict[int, npt.NDArray[np.intp]] = {}
        """Per ADD (its index among the deltas): the rows whose BLAS cosine is within the margin of the threshold."""

    async def prefilter(self, adds: list[tuple[int, Vector]], threshold: float, checkpoint: Checkpoint) -> None:
        """Record each ADD's candidate rows: one matrix product per block of rows, no division per cell.

        row · q̂ ≥ (threshold − margin) · |row| is the approximate cosine test with the unit query q̂. Blocks
        of `PREFILTER_ROWS` rows keep each product short (a checkpoint between) and cache-friendly, while all
        the batch's ADDs share the pass over the rows (small batches would re-read the matrix per ADD).
        """
        if not adds or not self.ids:
            return
        queries = np.stack([vector for _, vector in adds]).astype(np.float32)
        lengths = np.linalg.norm(queries, axis=1, keepdims=True)
        np.divide(queries, lengths, out=queries, where=lengths > 0)
        found: list[list[npt.NDArray[np.intp]]] = [[] for _ in adds]
        for start in range(0, len(self.ids), PREFILTER_ROWS):
            block = self.rows[start : start + PREFILTER_ROWS]
            floor = (threshold - PREFILTER_MARGIN) * self.norms[start : start + PREFILTER_ROWS]
            above = (block @ queries.T) >= floor[:, None]
            rows, columns = np.nonzero(above)
            for column in np.unique(columns).tolist():
                found[column].append(rows[columns == column] + start)
            await checkpoint()
        for column, (delta_index, _) in enumerate(adds):
            parts = found[column]
            self.candidates[delta_index] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


class _Merger:
    """One merge's working set: bullets by id with their order, the section indexes, and what was applied."""

    def __init__(self, playbook: Playbook, rules: SectionRules, source: str, counter_path: str) -> None:
        self.by_id: dict[str, Bullet] = {b.id: b for b in playbook.bullets}
        self.order: dict[str, tuple[int, ...]] = {b.id: (i,) for i, b in enumerate(playbook.bullets)}
        """Sort keys giving the playbook order: an ADD sorts right after its section's last bullet."""
        self.members: dict[str, list[str]] = {}
        """Each section's ids in playbook order (deleted ones are skipped when read)."""
        for b in playbook.bullets:
            self.members.setdefault(b.section, []).append(b.id)
        self.rank: dict[str, int] = {b.id: i for i, b in enumerate(playbook.bullets)}
        """Position within the section's order (ties among near-duplicates go to the earlier bullet)."""
        self._next_rank = len(playbook.bullets)
        self._seq = len(playbook.bullets)
        self.changed: dict[str, str] = {}
        """Bullets this merge added or rewrote → their content (compared exactly, not through the pre-filter)."""
        self.vectors: dict[str, _SectionVectors] = {}
        self.text_vectors: dict[str, Vector] = {}
        """The stripped content of every ADD and UPDATE → its vector."""
        self.identical: dict[str, dict[str, list[str]]] = {}
        """Per section with ADDs: normalised content → the ids that hold it."""
        self.allocator = IdAllocator(playbook, dataset=rules.dataset, path=counter_path)
        self.rules = rules
        self.source = source
        self.touched: set[str] = set()
        self.outcome = MergeOutcome(playbook=playbook)

    @property
    def bullets(self) -> list[Bullet]:
        """The bullets in playbook order."""
        return [self.by_id[i] for i in sorted(self.by_id, key=self.order.__getitem__)]

    def skip(self, delta: DeltaContextItem, why: str) -> None:
        note = f"skipped {delta.type} {delta.bullet_id or delta.section!r}: {why}"
        self.outcome.notes.append(note)
        log.warning("ace: delta skipped", delta_type=delta.type, bullet_id=delta.bullet_id, reason=why)

    def _forget_text(self, bullet: Bullet) -> None:
        holders = self.identical.get(bullet.section, {}).get(normalize(bullet.content))
        if holders is not None and bullet.id in holders:
            holders.remove(bullet.id)

    def _remember_text(self, bullet: Bullet) -> None:
        index = self.identical.get(bullet.section)
        if index is not None:
            index.setdefault(normalize(bullet.content), []).append(bullet.id)

    def delete(self, delta: DeltaContextItem) -> None:
        removed = None if delta.bullet_id is None else self.by_id.pop(delta.bullet_id, None)
        if removed is None:
            self.skip(delta, "no such bullet")
            return
        self._forget_text(removed)
        self.outcome.applied.append(
            DeltaContextItem(
                type="DELETE", section=removed.section, bullet_id=removed.id, content="", reasoning=delta.reasoning
            )
        )

    def update(self, delta: DeltaContextItem, bullet_id: str | None = None, reasoning: str | None = None) -> None:
        target = bullet_id or delta.bullet_id
        old = None if target is None else self.by_id.get(target)
        content = delta.content.strip()
        if old is None or not content:
            self.skip(delta, "no such bullet" if old is None else "no content")
            return
        reasoning = delta.reasoning if reasoning is None else reasoning
        # The search text described the old content; the new content is searched as written.
        updated = msgspec.structs.replace(old, content=content, searchable_text="")
        changed = find_contradiction(old.content, content)
        if changed is not None and (old.helpful or old.harmful):
            updated = msgspec.structs.replace(updated, helpful=0, harmful=0)
            note = (
                f"UPDATE of {old.id} changes what it says ({changed.kind}: {changed.detail}): "
                f"its votes (helpful={old.helpful}, harmful={old.harmful}) were reset"
            )
            self.outcome.notes.append(note)
            reasoning = f"{reasoning} [{note}]".strip()
        self._forget_text(old)
        self.by_id[old.id] = updated
        self.changed[old.id] = content
        self._remember_text(updated)
        self.touched.add(old.id)
        self.outcome.applied.append(
            DeltaContextItem(type="UPDATE", section=old.section, bullet_id=old.id, content=content, reasoning=reasoning)
        )

    def near(self, delta_index: int, delta: DeltaContextItem, threshold: float) -> list[tuple[str, float]]:
        """The live bullets of the ADD's section at or above `threshold`, most similar first, with their cosines.

        Original bullets come from the pre-filter and are re-scored exactly; bullets this merge added or
        rewrote are scored exactly against their current content. Ties go to the earlier bullet.
        """
        query = self.text_vectors[delta.content.strip()]
        section = self.vectors.get(delta.section)
        ids: list[str] = []
        scores: list[npt.NDArray[np.float64]] = []
        if section is not None:
            rows = section.candidates.get(delta_index, np.zeros(0, dtype=np.intp))
            rows = np.asarray([r for r in rows.tolist() if self._original(section.ids[r])], dtype=np.intp)
            if rows.size:
                ids += [section.ids[r] for r in rows.tolist()]
                scores.append(cosines(section.rows[rows], query, section.norms[rows]))
        fresh = [i for i in self.changed if i in self.by_id and self.by_id[i].section == delta.section]
        if fresh:
            ids += fresh
            scores.append(cosines(np.stack([self.text_vectors[self.changed[i]] for i in fresh]), query))
        if not ids:
            return []
        similarities = np.concatenate(scores)
        ranks = np.asarray([self.rank[i] for i in ids], dtype=np.int64)
        above = np.flatnonzero(similarities >= threshold)
        order = above[np.lexsort((ranks[above], -similarities[above]))]
        return [(ids[int(i)], float(similarities[int(i)])) for i in order]

    def _original(self, bullet_id: str) -> bool:
        """Still in the playbook with the content it came in with."""
        return bullet_id in self.by_id and bullet_id not in self.changed

    async def add(
        self,
        delta: DeltaContextItem,
        near: Callable[[], list[tuple[str, float]]],
        checkpoint: Checkpoint,
        settled: dict[str, str],
    ) -> None:
        content = delta.content.strip()
        refusal = self._add_refusal(delta, content)
        if refusal is not None:
            self.skip(delta, refusal)
            return
        kept_apart: list[str] = []
        pacer = Pacer(checkpoint, CONTRADICTION_CHUNK)  # a lesson near-duplicating thousands of bullets it contradicts
        for bullet_id, similarity in near():
            await pacer.tick()
            clash = find_contradiction(self.by_id[bullet_id].content, content)
            if clash is not None:
                note = (
                    f"ADD kept apart from {bullet_id} (cosine {similarity:.3f}): it contradicts it "
                    f"({clash.kind}: {clash.detail})"
                )
                self.outcome.notes.append(note)
                log.info("ace: contradicting near-duplicate kept apart", bullet_id=bullet_id, kind=clash.kind)
                kept_apart.append(bullet_id)
                continue
            if bullet_id in settled:
                self.skip(
                    delta,
                    f"near-duplicate (cosine {similarity:.3f}) of {bullet_id}, which this request's own "
                    f"{settled[bullet_id]} settles",
                )
                return
            self.outcome.notes.append(f"ADD became UPDATE of {bullet_id}: near-duplicate (cosine {similarity:.3f})")
            self.update(
                delta,
                bullet_id=bullet_id,
                reasoning=f"{delta.reasoning} [grow-and-refine: near-duplicate of {bullet_id} ({similarity:.3f})]",
            )
            return
        self._insert(delta, content, kept_apart)

    def _add_refusal(self, delta: DeltaContextItem, content: str) -> str | None:
        """Why the ADD cannot become a bullet at all, before any similarity work is spent on it."""
        if not self.rules.allows(delta.section):
            return f"section {delta.section!r} is not allowed for {self.rules.dataset!r}"
        if not content:
            return "no content"
        holders = self.identical.get(delta.section, {}).get(normalize(content), [])
        if holders:
            return f"identical to {min(holders, key=self.rank.__getitem__)}"
        return None

    def _insert(self, delta: DeltaContextItem, content: str, kept_apart: list[str]) -> None:
        """A new bullet under a fresh id; the near-duplicates it contradicts are named so a reader sees why."""
        new_id = self.allocator.issue(self.rules.prefix(delta.section))
        bullet = Bullet(id=new_id, section=delta.section, content=content, source_trajectory=self.source)
        self._place(bullet)
        self.changed[new_id] = content
        self._remember_text(bullet)
        self.touched.add(new_id)
        reasoning = delta.reasoning
        if kept_apart:
            reasoning = f"{reasoning} [contradicts {', '.join(kept_apart)}: kept as a separate bullet]".strip()
        self.outcome.applied.append(
            DeltaContextItem(type="ADD", section=delta.section, bullet_id=new_id, content=content, reasoning=reasoning)
        )

    def _place(self, bullet: Bullet) -> None:
        """After the last live bullet of its section, or at the end of the playbook when the section is empty."""
        members = self.members.setdefault(bullet.section, [])
        while members and members[-1] not in self.by_id:
            members.pop()
        self._seq += 1
        self.order[bullet.id] = (*self.order[members[-1]], self._seq) if members else (self._seq,)
        members.append(bullet.id)
        self.rank[bullet.id] = self._next_rank
        self._next_rank += 1
        self.by_id[bullet.id] = bullet

    async def prepare(
        self, deltas: list[DeltaContextItem], embeddings: Embeddings, threshold: float, budget: Budget
    ) -> None:
        """Embed what the ADDs compare against, once: their texts, their sections' bullets, the candidate rows."""
        adds = [
            (i, d)
            for i, d in enumerate(deltas)
            if d.type == "ADD" and d.content.strip() and self.rules.allows(d.section)
        ]
        if not adds:
            return
        texts = list(dict.fromkeys(d.content.strip() for d in deltas if d.type != "DELETE" and d.content.strip()))
        self.text_vectors.update(zip(texts, await embed_chunked(embeddings, texts, budget), strict=True))
        await budget.checkpoint()
        for section in dict.fromkeys(d.section for _, d in adds):
            ids = [i for i in self.members.get(section, []) if i in self.by_id]
            self.vectors[section] = await self._embed_section(ids, embeddings, budget)
            self.identical[section] = await self._normalized(ids, budget.checkpoint)
            queued = [(i, self.text_vectors[d.content.strip()]) for i, d in adds if d.section == section]
            for start in range(0, len(queued), ADD_BATCH):
                await self.vectors[section].prefilter(queued[start : start + ADD_BATCH], threshold, budget.checkpoint)

    async def _embed_section(self, ids: list[str], embeddings: Embeddings, budget: Budget) -> _SectionVectors:
        """The section's vectors and their float32 norms (per row: the same as the index's over all rows)."""
        if not ids:  # a section the ADDs open
            return _SectionVectors(ids, np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.float32))
        rows = await embed_chunked(embeddings, [self.by_id[i].content for i in ids], budget)
        await budget.checkpoint()
        return _SectionVectors(ids, rows, np.linalg.norm(rows, axis=1).astype(np.float32))

    async def _normalized(self, ids: list[str], checkpoint: Checkpoint) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for start in range(0, len(ids), NORMALIZE_CHUNK):
            for bullet_id in ids[start : start + NORMALIZE_CHUNK]:
                index.setdefault(normalize(self.by_id[bullet_id].content), []).append(bullet_id)
            await checkpoint()
        return index

    def prune(self, bullets: list[Bullet], max_bullets: int) -> list[Bullet]:
        excess = len(bullets) - max_bullets
        if excess <= 0:
            return bullets
        order = sorted(
            range(len(bullets)),
            key=lambda i: (
                bullets[i].confidence_score,
                -bullets[i].harmful,
                bullets[i].helpful,
                bullets[i].id in self.touched,
                i,
            ),
        )
        doomed = set(order[:excess])
        for i in sorted(doomed):
            bullet = bullets[i]
            self.outcome.pruned.append(bullet.id)
            self.outcome.applied.append(
                DeltaContextItem(
                    type="DELETE",
                    section=bullet.section,
                    bullet_id=bullet.id,
                    content="",
                    reasoning=f"size budget {max_bullets}: lowest confidence ({bullet.confidence_score:.2f})",
                )
            )
        return [b for i, b in enumerate(bullets) if i not in doomed]


async def merge(
    playbook: Playbook,
    deltas: list[DeltaContextItem],
    *,
    rules: SectionRules,
    embeddings: Embeddings,
    dedup_threshold: float,
    max_bullets: int | None = None,
    source: str = "",
    counters_changed: bool = False,
    now: datetime.datetime | None = None,
    reserved_ids: Iterable[str] = (),
    counter_path: str = COUNTER_PATH,
    budget: Budget = UNBOUNDED,
    caller_deltas: int = 0,
) -> MergeOutcome:
    """Apply `deltas` to `playbook` (counters already applied) as the module docstring describes.

    Args:
        playbook: The playbook after `apply_evaluations`.
        deltas: The changes, in the order they are applied.
        rules: The dataset's sections (allowed sections, id prefixes).
        embeddings: The embedder for near-duplicate detection (the context's cached one).
        dedup_threshold: Cosine at or above which an ADD updates its nearest bullet instead.
        max_bullets: The size budget; None for no budget.
        source: Recorded as `source_trajectory` of added bullets.
        counters_changed: Whether `apply_evaluations` changed anything (then `updated_at` moves too).
        now: The time to record as `updated_at` (default: the current time).
        reserved_ids: Ids named elsewhere in the request (a trajectory's used ids): never issued to a new
            bullet, whatever the playbook's metadata says, and their numbers raise the mark.
        counter_path: The JSON path named when an ADD finds no id left (`BulletIdsExhausted`, raised before
            anything is returned or saved).
        budget: What bounds the merge's work (the request's `AgentContext`): its checkpoint is awaited between
            chunks, yielding to the event loop and raising `DeadlineExceeded` once the deadline has passed.
        caller_deltas: How many of `deltas`, first, are the caller's own. A bullet a caller's UPDATE or DELETE
            names is settled: the curator's deltas after them leave it alone (an UPDATE or DELETE of it is left
            out, an ADD that would become an UPDATE of it is dropped), each with a note. A bullet the caller
            corrected is not then deleted, or rewritten, for what its old content earned.
    """
    merger = _Merger(playbook, rules, source, counter_path)
    merger.allocator.reserve(reserved_ids)
    await merger.prepare(deltas, embeddings, dedup_threshold, budget)
    settled: dict[str, str] = {
        d.bullet_id: d.type for d in deltas[:caller_deltas] if d.type != "ADD" and d.bullet_id is not None
    }
    for index, delta in enumerate(deltas):
        by_curator = index >= caller_deltas
        if by_curator and delta.type != "ADD" and delta.bullet_id in settled:
            merger.outcome.notes.append(
                f"the curator's {delta.type} of {delta.bullet_id} was left out: this request's own "
                f"{settled[delta.bullet_id]} of that bullet comes first"
            )
            continue
        match delta.type:
            case "DELETE":
                merger.delete(delta)
            case "UPDATE":
                merger.update(delta)
            case "ADD":
                near = functools.partial(merger.near, index, delta, dedup_threshold)
                await merger.add(delta, near, budget.checkpoint, settled if by_curator else {})
        await budget.checkpoint()  # one delta is bounded work: an exact cosine per candidate, contradictions in chunks
    bullets = merger.bullets
    if max_bullets is not None:
        bullets = merger.prune(bullets, max_bullets)
    outcome = merger.outcome
    changed = bool(outcome.applied) or counters_changed
    metadata = msgspec.structs.replace(
        playbook.metadata,
        last_bullet_number=merger.allocator.last,
        updated_at=(now or datetime.datetime.now(datetime.UTC)) if changed else playbook.metadata.updated_at,
    )
    outcome.playbook = Playbook(metadata=metadata, bullets=bullets)
    return outcome
