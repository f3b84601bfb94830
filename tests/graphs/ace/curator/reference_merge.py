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

Deltas that break the rules are skipped with a note here; the HTTP layer rejects a caller's own invalid
deltas before they get this far (`graphs.ace.checks.delta_problems`), while a model's are dropped and logged.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec
import numpy as np
import numpy.typing as npt
import structlog
from langchain_core.embeddings import Embeddings

from contracts.ace import Bullet, BulletEvaluation, DeltaContextItem, Playbook
from graphs.ace.playbook.ids import IdAllocator
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.search.index import embed_texts
from graphs.text.contradiction import find_contradiction
from graphs.text.normalize import normalize

log = structlog.get_logger(__name__)


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


class _Merger:
    """One merge's working set: bullets in order, the id allocator, and what was applied."""

    def __init__(self, playbook: Playbook, rules: SectionRules, source: str) -> None:
        self.bullets: list[Bullet] = list(playbook.bullets)
        self.allocator = IdAllocator(playbook)
        self.rules = rules
        self.source = source
        self.touched: set[str] = set()
        self.outcome = MergeOutcome(playbook=playbook)

    def position(self, bullet_id: str) -> int | None:
        return next((i for i, b in enumerate(self.bullets) if b.id == bullet_id), None)

    def skip(self, delta: DeltaContextItem, why: str) -> None:
        note = f"skipped {delta.type} {delta.bullet_id or delta.section!r}: {why}"
        self.outcome.notes.append(note)
        log.warning("ace: delta skipped", delta_type=delta.type, bullet_id=delta.bullet_id, reason=why)

    def delete(self, delta: DeltaContextItem) -> None:
        index = None if delta.bullet_id is None else self.position(delta.bullet_id)
        if index is None:
            self.skip(delta, "no such bullet")
            return
        removed = self.bullets.pop(index)
        self.outcome.applied.append(
            DeltaContextItem(
                type="DELETE", section=removed.section, bullet_id=removed.id, content="", reasoning=delta.reasoning
            )
        )

    def update(self, delta: DeltaContextItem, bullet_id: str | None = None, reasoning: str | None = None) -> None:
        target = bullet_id or delta.bullet_id
        index = None if target is None else self.position(target)
        content = delta.content.strip()
        if index is None or not content:
            self.skip(delta, "no such bullet" if index is None else "no content")
            return
        old = self.bullets[index]
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
        self.bullets[index] = updated
        self.touched.add(old.id)
        self.outcome.applied.append(
            DeltaContextItem(type="UPDATE", section=old.section, bullet_id=old.id, content=content, reasoning=reasoning)
        )

    def add(self, delta: DeltaContextItem, near: list[tuple[str, float]]) -> None:
        content = delta.content.strip()
        if not self.rules.allows(delta.section):
            self.skip(delta, f"section {delta.section!r} is not allowed for {self.rules.dataset!r}")
            return
        if not content:
            self.skip(delta, "no content")
            return
        same = next(
            (b for b in self.bullets if b.section == delta.section and normalize(b.content) == normalize(content)),
            None,
        )
        if same is not None:
            self.skip(delta, f"identical to {same.id}")
            return
        kept_apart: list[str] = []
        for bullet_id, similarity in near:
            index = self.position(bullet_id)
            if index is None:
                continue
            clash = find_contradiction(self.bullets[index].content, content)
            if clash is not None:
                note = (
                    f"ADD kept apart from {bullet_id} (cosine {similarity:.3f}): it contradicts it "
                    f"({clash.kind}: {clash.detail})"
                )
                self.outcome.notes.append(note)
                log.info("ace: contradicting near-duplicate kept apart", bullet_id=bullet_id, kind=clash.kind)
                kept_apart.append(bullet_id)
                continue
            self.outcome.notes.append(f"ADD became UPDATE of {bullet_id}: near-duplicate (cosine {similarity:.3f})")
            self.update(
                delta,
                bullet_id=bullet_id,
                reasoning=f"{delta.reasoning} [grow-and-refine: near-duplicate of {bullet_id} ({similarity:.3f})]",
            )
            return
        new_id = self.allocator.issue(self.rules.prefix(delta.section))
        bullet = Bullet(id=new_id, section=delta.section, content=content, source_trajectory=self.source)
        last_of_section = max((i for i, b in enumerate(self.bullets) if b.section == delta.section), default=None)
        self.bullets.insert(len(self.bullets) if last_of_section is None else last_of_section + 1, bullet)
        self.touched.add(new_id)
        reasoning = delta.reasoning
        if kept_apart:
            reasoning = f"{reasoning} [contradicts {', '.join(kept_apart)}: kept as a separate bullet]".strip()
        self.outcome.applied.append(
            DeltaContextItem(type="ADD", section=delta.section, bullet_id=new_id, content=content, reasoning=reasoning)
        )

    def prune(self, max_bullets: int) -> None:
        excess = len(self.bullets) - max_bullets
        if excess <= 0:
            return
        order = sorted(
            range(len(self.bullets)),
            key=lambda i: (
                self.bullets[i].confidence_score,
                -self.bullets[i].harmful,
                self.bullets[i].helpful,
                self.bullets[i].id in self.touched,
                i,
            ),
        )
        doomed = set(order[:excess])
        for i in sorted(doomed):
            bullet = self.bullets[i]
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
        self.bullets = [b for i, b in enumerate(self.bullets) if i not in doomed]


async def _near_in_section(
    merger: _Merger, delta: DeltaContextItem, embeddings: Embeddings, threshold: float
) -> list[tuple[str, float]]:
    """The bullets of the ADD's section at or above `threshold`, most similar first, with their cosines."""
    peers = [b for b in merger.bullets if b.section == delta.section]
    if not peers or not delta.content.strip():
        return []
    vectors = await embed_texts(embeddings, [delta.content.strip(), *(b.content for b in peers)])
    similarities = _cosines(vectors[0], vectors[1:])
    above = np.flatnonzero(similarities >= threshold)
    order = above[np.lexsort((above, -similarities[above]))]  # ties: playbook order
    return [(peers[int(i)].id, float(similarities[int(i)])) for i in order]


def _cosines(query: npt.NDArray[np.float32], rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(rows, axis=1).astype(np.float64) * float(np.linalg.norm(query))
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float64] = np.einsum("ij,j->i", rows, query).astype(np.float64) / norms  # as in search
    return result


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
        reserved_ids: Ids named elsewhere in the request (a trajectory's used ids): never
            issued to a new bullet, whatever the playbook's metadata says, and their numbers raise the mark.
    """
    merger = _Merger(playbook, rules, source)
    merger.allocator.reserve(reserved_ids)
    for delta in deltas:
        match delta.type:
            case "DELETE":
                merger.delete(delta)
            case "UPDATE":
                merger.update(delta)
            case "ADD":
                near = await _near_in_section(merger, delta, embeddings, dedup_threshold)
                merger.add(delta, near)
    if max_bullets is not None:
        merger.prune(max_bullets)
    outcome = merger.outcome
    changed = bool(outcome.applied) or counters_changed
    metadata = msgspec.structs.replace(
        playbook.metadata,
        last_bullet_number=merger.allocator.last,
        updated_at=(now or datetime.datetime.now(datetime.UTC)) if changed else playbook.metadata.updated_at,
    )
    outcome.playbook = Playbook(metadata=metadata, bullets=merger.bullets)
    return outcome
