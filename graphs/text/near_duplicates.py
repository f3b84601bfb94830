"""Text near-duplicates, in one place: when two texts count as one, and how to find such pairs in bulk.

The rule: two texts are near-duplicates when the exact Jaccard similarity of their character-shingle
sets (`NEAR_DUP_SHINGLE_CHARS`-grams of the normalised text, hashed by `graphs.text.shingles.shingle_array`)
is at least the caller's threshold (the Librarian's is `LIBRARIAN_NEAR_DUP_THRESHOLD`), and their MinHash
estimate (`NEAR_DUP_SIGNATURE_LENGTH` values) is at least that threshold minus `NEAR_DUP_ESTIMATE_SLACK`.
The estimate gate is how the Librarian has always pre-filtered; it stays part of the rule so decisions do
not change with the search algorithm.

Finding every such pair among n texts must not cost n² comparisons (a request can carry thousands of
hits, and texts made of a shared base plus a unique tail pass any MinHash pre-filter and fail the exact
check). `find_near_duplicates` therefore works in bulk, with numpy, in bounded chunks:

1. All texts are shingled at once (one code-point array, one vectorised k-gram hash, one sort of a
   matrix with a row per text).
2. Candidate pairs come from prefix filtering, an exact set-similarity join: order every set's shingles
   rarest first (one global order); two sets with Jaccard ≥ t must share a shingle among the first
   |x| − ⌈t·|x|⌉ + 1 of each. One sort of those prefix entries buckets them by shingle, so only texts
   sharing a rare shingle meet. Unlike banded LSH this misses no pair at any threshold, and texts
   that share a common base but differ in their own rare shingles rarely meet at all.
3. Caps make the worst case linear: a shingle bucket pairs each text with at most
   `NEAR_DUP_TOKEN_ANCHORS` earlier members, and each text is compared with at most
   `NEAR_DUP_MAX_COMPARED` earlier texts (the earliest, which is where a first-seen-wins merge looks
   first). Only inputs with more candidates than that for one text can decide differently from an
   all-pairs search.
4. The exact Jaccard is vectorised over all candidate pairs; MinHash signatures (one matrix) and the
   estimate gate only for the pairs that reach the threshold by it, usually a handful: both tests must
   pass, and the exact one costs less per pair than a text's 64-value signature.

Few texts take shortcuts that find the same pairs (`search_path`): up to `ALL_PAIRS_MAX_TEXTS` texts no cap
can bind, so every pair is compared instead of prefix filtering (`all_pairs`), and when those texts are
short as well (a session's first round of a handful of hits) the whole search runs on Python sets of the
same shingle hashes (`sets`), where the bulk path's fixed cost of a few dozen numpy calls would outweigh
the work.

Every step is a generator (`graphs.chunked`): it yields after each chunk of about `NEAR_DUP_CHUNK`
shingles, so an async caller checks its deadline and lets the event loop run in between.

ACE's grow-and-refine is a different notion on purpose (embedding cosine between lessons of one section,
`ACE_DEDUP_THRESHOLD`): see `graphs/ace/curator/merge.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from graphs.chunked import Chunked, finish
from graphs.text.normalize import normalize
from graphs.text.shingles import _EMPTY, _MIX, _POLY, _permutations, jaccard, jaccard_arrays, shingle_array

NEAR_DUP_SHINGLE_CHARS = 3
"""Shingle length in characters: 3 suits mixed Japanese/English snippets."""
NEAR_DUP_SIGNATURE_LENGTH = 64
"""MinHash values per text; the estimate's standard error is about sqrt(J(1-J)/64) ≈ 0.05 at J = 0.8."""
NEAR_DUP_ESTIMATE_SLACK = 0.15
"""A pair whose MinHash estimate is below threshold − slack is not a near-duplicate, whatever its exact Jaccard."""
NEAR_DUP_MAX_COMPARED = 32
"""Earlier texts one text is compared with, at most: the bound that keeps any input linear."""
NEAR_DUP_TOKEN_ANCHORS = 8
"""Earlier texts a shared rare shingle pairs a text with, at most (bounds the candidate generation)."""
NEAR_DUP_CHUNK = 65_536
"""Shingles (or shingle-pair operations) per chunk between pauses: a few milliseconds of numpy."""

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
_FLOAT_SLACK = 1e-9
"""Subtracted from a threshold product before comparing, so float rounding never drops a pair that reaches it."""
_FREQUENCY_BUCKETS = 1 << 16
"""Shingle frequencies are counted per hash bucket: any consistent order is correct, rarer-first is fast."""
_TEXT_BITS = 24
_TEXT_MASK = np.uint64((1 << _TEXT_BITS) - 1)
"""A sort key packs a 40-bit shingle key (8-bit frequency, 32-bit hash) and a 24-bit text index."""

IntT = TypeVar("IntT", np.int64, np.uint64)
SortKind = Literal["quicksort", "stable"]
Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]
SizeT = TypeVar("SizeT", int, Int64Array)


@dataclass(frozen=True)
class ShingleSets:
    """Many texts' shingle sets in one array: text t owns `values[offsets[t]:offsets[t + 1]]` (sorted, distinct)."""

    values: UInt64Array
    offsets: Int64Array

    @property
    def sizes(self) -> Int64Array:
        """How many distinct shingles each text has."""
        return np.diff(self.offsets)

    def row(self, index: int) -> UInt64Array:
        """One text's shingles, equal to `shingle_array(text)`."""
        return self.values[self.offsets[index] : self.offsets[index + 1]]

    def __len__(self) -> int:
        return len(self.offsets) - 1


@dataclass(frozen=True)
class NearDuplicates:
    """For every text, the earlier texts it is a near-duplicate of, and what finding them cost."""

    earlier: list[list[int]]
    """`earlier[j]`: indexes i < j of texts that are near-duplicates of text j, ascending."""
    compared: int
    """Pairs whose exact Jaccard was computed (at most `NEAR_DUP_MAX_COMPARED` per text)."""
    verified: int
    """Pairs at or above the threshold whose MinHash estimate was then computed (a subset of those compared)."""


def is_near_duplicate(first: str, second: str, threshold: float) -> bool:
    """Whether two texts are near-duplicates by exact shingle Jaccard (for a handful of texts, not in bulk)."""
    return jaccard_arrays(shingle_array(normalize(first)), shingle_array(normalize(second))) >= threshold


def near_duplicates(normalized: Sequence[str], threshold: float) -> NearDuplicates:
    """`find_near_duplicates` run to the end at once (tests, small inputs, sync callers)."""
    return finish(find_near_duplicates(normalized, threshold))


ALL_PAIRS_MAX_TEXTS = min(NEAR_DUP_TOKEN_ANCHORS, NEAR_DUP_MAX_COMPARED) + 1
"""Up to this many texts, no cap can bind (a shingle's bucket holds one entry per text, so at most this many
minus one earlier ones): prefix filtering would find exactly the pairs that reach the threshold, and every
pair may be compared instead, without its set-up (a 65,536-bucket frequency table, a dozen sorts)."""


FEW_TEXTS_MAX_CHARS = 1_000
"""Up to `ALL_PAIRS_MAX_TEXTS` texts of at most this many characters in all (a short history: the first round
of a session, a handful of hits), the search runs on Python sets (`_few_near_duplicates`), where the bulk
path's few dozen numpy calls cost more than the work itself. Five 20-character hits: ~0.25 ms in bulk,
~0.08 ms on sets, each about twice that amid a request's other work."""


SearchPath = Literal["sets", "all_pairs", "prefix"]
"""How `find_near_duplicates` searches: `sets` (a few short texts, on Python sets), `all_pairs` (a few texts,
every pair in bulk) or `prefix` (prefix filtering, any number of texts)."""


def search_path(normalized: Sequence[str]) -> SearchPath:
    """The cheapest way to search these texts that finds what prefix filtering with its caps would find."""
    if len(normalized) > ALL_PAIRS_MAX_TEXTS:
        return "prefix"
    return "sets" if sum(map(len, normalized)) <= FEW_TEXTS_MAX_CHARS else "all_pairs"


def find_near_duplicates(
    normalized: Sequence[str], threshold: float, *, path: SearchPath | None = None
) -> Chunked[NearDuplicates]:
    """Every pair (i < j) of texts that are near-duplicates (see the module docstring).

    Args:
        normalized: Texts already passed through `normalize`, in the order that decides "earlier".
        threshold: Exact shingle Jaccard at or above which two texts are near-duplicates, in (0, 1].
        path: How to search; `search_path` picks by default. Forcing a way is for tests, which compare them:
            `sets` and `all_pairs` take at most `ALL_PAIRS_MAX_TEXTS` texts, where no cap can bind.

    Returns:
        A chunked computation of the `NearDuplicates`.

    Raises:
        ValueError: A threshold outside (0, 1] (at 0, texts sharing nothing would be near-duplicates), or a
            forced shortcut for more texts than it is exact for.
    """
    n = len(normalized)
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    path = path or search_path(normalized)
    if path != "prefix" and n > ALL_PAIRS_MAX_TEXTS:
        raise ValueError(f"the {path} search is exact for at most {ALL_PAIRS_MAX_TEXTS} texts, got {n}")
    if path == "sets":
        return _few_near_duplicates(normalized, threshold)
    sets = yield from shingle_sets(normalized)
    if path == "all_pairs":
        left, right = _all_pairs(sets, threshold)
    else:
        left, right = yield from _candidate_pairs(sets, threshold)
    # Both tests must pass; the exact one runs first because it is the cheaper per pair (a sort of the two
    # sets, against 64 hashes of every shingle of a text for its signature) and it rejects nearly every pair,
    # so signatures are computed only for the few pairs that are near-duplicates by exact Jaccard.
    compared = len(left)
    if compared:
        similarity = yield from jaccard_of_pairs(sets, left, right)
        keep = similarity >= threshold
        left, right = left[keep], right[keep]
    verified = len(left)
    if verified:
        left, right = yield from _estimate_gate(sets, left, right, threshold)
    earlier: list[list[int]] = [[] for _ in range(n)]
    for i, j in zip(left.tolist(), right.tolist(), strict=True):  # sorted by (j, i)
        earlier[j].append(i)
    return NearDuplicates(earlier=earlier, compared=compared, verified=verified)


def shingle_sets(normalized: Sequence[str]) -> Chunked[ShingleSets]:
    """The shingle sets of many normalised texts, hashed exactly as `shingle_array` hashes one, in chunks."""
    values: list[UInt64Array] = []
    sizes: list[Int64Array] = []
    lengths = np.fromiter(map(len, normalized), dtype=np.int64, count=len(normalized))
    for start, end in _row_chunks(lengths, NEAR_DUP_CHUNK):
        chunk_values, chunk_sizes = _shingle_chunk(normalized[start:end], lengths[start:end])
        values.append(chunk_values)
        sizes.append(chunk_sizes)
        yield
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(normalized) + 1, dtype=np.int64)
    np.cumsum(all_sizes, out=offsets[1:])
    return ShingleSets(values=np.concatenate(values) if values else np.zeros(0, dtype=np.uint64), offsets=offsets)


def _shingle_chunk(texts: Sequence[str], lengths: Int64Array) -> tuple[UInt64Array, Int64Array]:
    """Sorted distinct shingle hashes of each text (`lengths[t]` characters), concatenated, and how many each has."""
    k = NEAR_DUP_SHINGLE_CHARS
    count = len(texts)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(count, dtype=np.int64)
    joined = "".join(texts).encode("utf-32-le", "surrogatepass")
    points = np.frombuffer(joined, dtype=np.uint32).astype(np.uint64)
    starts = np.cumsum(lengths) - lengths
    hashes: list[UInt64Array] = []
    owners: list[Int64Array] = []
    if total >= k:
        hashed, owner = _full_shingles(points, lengths, starts)
        hashes.append(hashed)
        owners.append(owner)
    _add_short_texts(points, lengths, starts, hashes, owners)
    mixed = (np.concatenate(hashes) * _MIX) >> _SHIFT
    owner = np.concatenate(owners)
    full = np.maximum(lengths - k, -1) + 1
    return _distinct_by_text(mixed, owner, full, full + ((lengths > 0) & (lengths < k)))


_ROW_SORT_SLACK = 4
"""Texts are sorted as rows of one matrix while its padding costs at most this many times the shingles."""


def rows_fit(texts: int, longest: int, shingles: int) -> bool:
    """Whether `texts` rows as wide as the `longest` text's shingles are few enough cells to sort as a matrix."""
    return texts * longest <= _ROW_SORT_SLACK * shingles + 1024


def _distinct_by_text(
    mixed: UInt64Array, owner: Int64Array, full: Int64Array, per_text: Int64Array
) -> tuple[UInt64Array, Int64Array]:
    """Each text's distinct shingle hashes (32-bit values), ascending, concatenated; and how many each text has.

    `mixed` holds every text's full k-grams (`full[t]` of them, consecutive, text by text), then the one
    whole-text shingle of each text shorter than k; `owner` says whose each is, `per_text` how many each has.

    Sorting each text's shingles on its own is what is needed, and numpy sorts the rows of a matrix of 32-bit
    values (one row per text, padded to the longest) in about a quarter of the time of one sort of the whole
    array keyed by text: short rows sort within the cache. Texts of very different lengths would make the
    padding cost more than it saves; those are sorted as one array of (text, hash) keys instead.
    """
    count = len(per_text)
    width = int(per_text.max())
    if not rows_fit(count, width, len(mixed)):
        keys = _sorted_distinct((owner.astype(np.uint64) << _SHIFT) | mixed, kind="stable")
        # Sorted keys: each text's run starts where its index, shifted into the high bits, would be inserted.
        bounds = np.searchsorted(keys, np.arange(count + 1, dtype=np.uint64) << _SHIFT)
        return keys & _LOW32, np.diff(bounds).astype(np.int64)
    # Each shingle's cell in the flattened matrix: its text's row, and its place in the text's run (a short
    # text's one shingle goes first in its row). One flat scatter of 32-bit values: scattering by (row,
    # column) pairs, or casting while scattering, costs several times as much.
    full_total = int(full.sum())
    cell = np.empty(len(mixed), dtype=np.int64)
    cell[:full_total] = np.arange(full_total, dtype=np.int64) + np.repeat(
        np.arange(count, dtype=np.int64) * width - (np.cumsum(full) - full), full
    )
    cell[full_total:] = owner[full_total:] * width
    # Padding sorts last; a real hash equal to the pad is still counted, because only each row's first
    # `per_text` entries are read.
    rows = np.full((count, width), np.iinfo(np.uint32).max, dtype=np.uint32)
    rows.reshape(-1)[cell] = mixed.astype(np.uint32)
    rows.sort(axis=1)
    keep = np.arange(width) < per_text[:, None]
    keep[:, 1:] &= rows[:, 1:] != rows[:, :-1]
    return rows[keep].astype(np.uint64), keep.sum(axis=1, dtype=np.int64)


def _full_shingles(points: UInt64Array, lengths: Int64Array, starts: Int64Array) -> tuple[UInt64Array, Int64Array]:
    """The k-gram hashes of every text at least k long, with their text; one vectorised pass over the joined text.

    Hashing the joined text at once costs one numpy pass per character offset instead of one per text;
    the k-grams that cross into the next text (those starting in a text's last k − 1 positions) are
    dropped afterwards by one scatter of those positions, and the owners of the rest are a `repeat`
    of each text's k-gram count, in the same order.
    """
    k = NEAR_DUP_SHINGLE_CHARS
    positions = len(points) - k + 1
    # Horner's rule in place: ((p0·P + p1)·P + p2) wraps mod 2^64 exactly as hashing from zero does.
    hashed = points[:positions].copy()
    for offset in range(1, k):
        hashed *= _POLY
        hashed += points[offset : positions + offset]
    crossing = ((starts + lengths)[:, None] - np.arange(1, k, dtype=np.int64)).ravel()
    inside = np.ones(positions, dtype=bool)
    inside[crossing[(crossing >= 0) & (crossing < positions)]] = False
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), np.maximum(lengths - k + 1, 0))
    return hashed[inside], owner


def _add_short_texts(
    points: UInt64Array,
    lengths: Int64Array,
    starts: Int64Array,
    hashes: list[UInt64Array],
    owners: list[Int64Array],
) -> None:
    """A text shorter than k is one shingle of its whole length, or it would have none and match nothing."""
    for short in range(1, NEAR_DUP_SHINGLE_CHARS):
        which = np.flatnonzero(lengths == short)
        if len(which):
            hashed = np.zeros(len(which), dtype=np.uint64)
            for offset in range(short):
                hashed = hashed * _POLY + points[starts[which] + offset]
            hashes.append(hashed)
            owners.append(which.astype(np.int64))


def _sorted_distinct(values: npt.NDArray[IntT], kind: SortKind = "quicksort") -> npt.NDArray[IntT]:
    """`np.unique` by sorting in place: numpy's hash-based unique is several times slower on these arrays.

    `kind="stable"` for values already grouped into ascending, non-overlapping runs (a merge sort's case).
    """
    values.sort(kind=kind)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _gather(sets: ShingleSets, rows: Int64Array) -> tuple[UInt64Array, Int64Array]:
    """The concatenated shingles of `rows` (in that order) and each row's count."""
    at, lengths = _positions(sets, rows)
    return sets.values[at], lengths


def _positions(sets: ShingleSets, rows: Int64Array) -> tuple[Int64Array, Int64Array]:
    """Where the shingles of `rows` (in that order) stand in `sets.values`, and each row's count."""
    lengths = sets.sizes[rows]
    total = int(lengths.sum())
    run_starts = np.cumsum(lengths) - lengths
    return np.repeat(sets.offsets[rows] - run_starts, lengths) + np.arange(total, dtype=np.int64), lengths


def _row_chunks(weights: Int64Array, budget: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) ranges whose weights sum to about `budget` (at least one item each)."""
    if not len(weights):
        return []
    cumulative = np.cumsum(weights)
    bounds = [0]
    while bounds[-1] < len(weights):
        start = bounds[-1]
        before = int(cumulative[start - 1]) if start else 0
        end = int(np.searchsorted(cumulative, before + budget, side="right"))
        bounds.append(max(end, start + 1))
    return list(pairwise(bounds))


def minhash_rows(sets: ShingleSets, rows: Int64Array) -> Chunked[UInt64Array]:
    """MinHash signatures of the given texts, one row each, equal to `shingles.minhash_signature` of each."""
    signatures = np.full((len(rows), NEAR_DUP_SIGNATURE_LENGTH), _EMPTY, dtype=np.uint64)
    filled = np.flatnonzero(sets.sizes[rows] > 0)
    for start, end in _row_chunks(sets.sizes[rows[filled]], NEAR_DUP_CHUNK // 8):
        chunk = filled[start:end]
        signatures[chunk] = _signature_rows(*_gather(sets, rows[chunk]))
        yield
    return signatures


def _signature_rows(values: UInt64Array, lengths: Int64Array) -> UInt64Array:
    """The MinHash signatures of consecutive non-empty sets (`lengths[t]` values each), one row per set."""
    a, b = _permutations(NEAR_DUP_SIGNATURE_LENGTH)
    hashed = a[:, None] * values[None, :]
    hashed += b[:, None]
    # The shift is monotone, so the minimum of the shifted values is the shifted minimum.
    minima = np.minimum.reduceat(hashed, np.cumsum(lengths) - lengths, axis=1)
    rows: UInt64Array = (minima >> _SHIFT).T
    return rows


def jaccard_of_pairs(sets: ShingleSets, left: Int64Array, right: Int64Array) -> Chunked[npt.NDArray[np.float64]]:
    """Exact Jaccard of each pair (left[p], right[p]), equal to `shingles.jaccard_arrays` of the two rows."""
    result = np.zeros(len(left), dtype=np.float64)
    for start, end in _row_chunks(sets.sizes[left] + sets.sizes[right], NEAR_DUP_CHUNK):
        left_values, left_sizes = _gather(sets, left[start:end])
        right_values, right_sizes = _gather(sets, right[start:end])
        pair = np.arange(end - start, dtype=np.uint64)
        keys = np.concatenate(
            [
                (np.repeat(pair, left_sizes) << _SHIFT) | left_values,
                (np.repeat(pair, right_sizes) << _SHIFT) | right_values,
            ]
        )
        # Both halves are already sorted (pairs ascending, each set ascending): a stable sort merges the two
        # runs in linear time, several times faster here than a quicksort of the whole.
        keys.sort(kind="stable")
        # Each set is distinct, so a key seen twice is a shingle the two texts share.
        shared = keys[1:][keys[1:] == keys[:-1]] >> _SHIFT
        intersection = np.bincount(shared.astype(np.intp), minlength=end - start)
        union = left_sizes + right_sizes - intersection
        result[start:end] = np.divide(intersection, union, out=np.ones(end - start), where=union > 0)
        yield
    return result


def _few_near_duplicates(normalized: Sequence[str], threshold: float) -> NearDuplicates:
    """`find_near_duplicates` of a few short texts, on Python sets of the same shingle hashes: the same result.

    Every pair is compared (`ALL_PAIRS_MAX_TEXTS`: no cap could bind) by the bulk path's own rules (the size
    check, the exact Jaccard, the MinHash gate), the signatures only for the texts of pairs that pass the
    exact check.
    """
    sets = [shingle_set(text) for text in normalized]
    pairs: list[tuple[int, int]] = []
    compared = 0
    for j, later in enumerate(sets):
        for i, earlier in enumerate(sets[:j]):
            small, large = sorted((len(earlier), len(later)))
            if small and _sizes_allow(small, large, threshold):
                compared += 1
                if jaccard(earlier, later) >= threshold:
                    pairs.append((i, j))
    found: list[list[int]] = [[] for _ in normalized]
    if pairs:
        texts = sorted({t for pair in pairs for t in pair})
        row = {t: r for r, t in enumerate(texts)}
        values = np.fromiter((value for t in texts for value in sets[t]), dtype=np.uint64)
        signatures = _signature_rows(values, np.array([len(sets[t]) for t in texts], dtype=np.int64))
        left = signatures[[row[i] for i, _ in pairs]]
        right = signatures[[row[j] for _, j in pairs]]
        for (i, j), kept in zip(pairs, _estimates_agree(left, right, threshold).tolist(), strict=True):
            if kept:  # pairs come sorted by (j, i)
                found[j].append(i)
    return NearDuplicates(earlier=found, compared=compared, verified=len(pairs))


_MASK64 = (1 << 64) - 1


def shingle_set(text: str) -> set[int]:
    """`shingles.shingle_array(text)` as a Python set: the same hash, in Python integers mod 2^64, per text.

    For a few short texts a set is built faster than the array, and Python sets intersect faster than
    numpy calls start.
    """
    points = [ord(char) for char in text]
    poly, mix = int(_POLY), int(_MIX)
    if NEAR_DUP_SHINGLE_CHARS == 3 and len(points) >= 3:  # the k-gram hash written out: most of the cost
        return {
            (((((first * poly + second) * poly + third) & _MASK64) * mix) & _MASK64) >> 32
            for first, second, third in zip(points, points[1:], points[2:], strict=False)
        }
    k = min(NEAR_DUP_SHINGLE_CHARS, len(points))
    found: set[int] = set()
    if not k:
        return found
    for start in range(len(points) - k + 1):
        hashed = 0
        for point in points[start : start + k]:
            hashed = (hashed * poly + point) & _MASK64
        found.add(((hashed * mix) & _MASK64) >> 32)
    return found


def _all_pairs(sets: ShingleSets, threshold: float) -> tuple[Int64Array, Int64Array]:
    """Every pair (i < j) of non-empty texts whose sizes let the Jaccard reach `threshold`, sorted by (j, i)."""
    later, earlier = np.tril_indices(len(sets), k=-1)  # row-major: sorted by (later, earlier)
    sizes = sets.sizes
    filled = (sizes[earlier] > 0) & (sizes[later] > 0)
    earlier, later = earlier[filled].astype(np.int64), later[filled].astype(np.int64)
    keep = _worth_comparing(sizes, earlier, later, threshold)
    return earlier[keep], later[keep]


def _candidate_pairs(sets: ShingleSets, threshold: float) -> Chunked[tuple[Int64Array, Int64Array]]:
    """Pairs (i < j) that could reach `threshold`, sorted by (j, i), at most NEAR_DUP_MAX_COMPARED per j."""
    n = len(sets)
    sizes = sets.sizes
    empty = np.zeros(0, dtype=np.int64)
    if n < 2 or not len(sets.values):
        return empty, empty
    if n >= 1 << _TEXT_BITS:
        raise ValueError(f"at most {(1 << _TEXT_BITS) - 1} texts at once, got {n}")
    keyed = yield from _prefix_entries(sets, threshold)
    keyed.sort()
    text = (keyed & _TEXT_MASK).astype(np.int64)
    group_start, anchors = _token_anchors(keyed >> np.uint64(_TEXT_BITS))
    total = int(anchors.sum())
    yield
    if not total:
        return empty, empty
    later = np.repeat(text, anchors)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(anchors) - anchors, anchors)
    earlier = text[np.repeat(group_start, anchors) + within]
    pair_keys = _sorted_distinct(later * n + earlier)
    later, earlier = pair_keys // n, pair_keys % n
    yield
    keep = _worth_comparing(sizes, earlier, later, threshold)
    return earlier[keep], later[keep]


def _prefix_entries(sets: ShingleSets, threshold: float) -> Chunked[UInt64Array]:
    """Each text's prefix shingles (rarest first) that another text may hold, keyed (token, text), unsorted.

    Prefix filtering: two texts reaching `threshold` share a shingle among the rarest of each, so only
    those need bucketing; the rest of each text never makes a candidate pair. A shingle whose hash bucket
    counts one (text, shingle) is in that text's set alone and pairs it with no other, so it is left out;
    and a text with at least as many such shingles as its prefix is long (most texts: such shingles come
    first in the order) has nothing to bucket, so only the other texts are ordered at all. One chunk of
    those texts per pause.
    """
    sizes = sets.sizes
    order_key = rarest_first_keys(sets.values)
    # |x ∩ y| ≥ ⌈t·|x|⌉ for any y with J(x, y) ≥ t; rounding down the bound only lengthens the prefix.
    needed = np.maximum(np.ceil(threshold * sizes - _FLOAT_SLACK).astype(np.int64), 1)
    prefix = np.where(sizes > 0, sizes - needed + 1, 0)
    alone_so_far = np.concatenate([[0], np.cumsum((order_key >> _SHIFT) == 1)])
    alone = alone_so_far[sets.offsets[1:]] - alone_so_far[sets.offsets[:-1]]
    pending = np.flatnonzero(prefix > alone)
    entries: list[UInt64Array] = [np.zeros(0, dtype=np.uint64)]
    for start, end in _row_chunks(sizes[pending], NEAR_DUP_CHUNK):
        rows = pending[start:end]
        at, lengths = _positions(sets, rows)
        ordered = _rarest_first_within_texts(order_key[at], lengths)
        # Only the first `prefix[t]` entries of each text's run are taken: gathered directly, not masked.
        taken = prefix[rows]
        run_start = np.cumsum(lengths) - lengths
        first = np.repeat(run_start - (np.cumsum(taken) - taken), taken) + np.arange(int(taken.sum()), dtype=np.int64)
        prefix_keys, owners = ordered[first], np.repeat(rows.astype(np.uint64), taken)
        shared = (prefix_keys >> _SHIFT) > 1
        # Re-key the prefix entries as (token, text) so one sort buckets them by shingle.
        entries.append((prefix_keys[shared] << np.uint64(_TEXT_BITS)) | owners[shared])
        yield
    return np.concatenate(entries)


def _rarest_first_within_texts(order_key: UInt64Array, sizes: Int64Array) -> UInt64Array:
    """Each text's order keys (`sizes[t]` of them, consecutive, ascending by hash) sorted rarest first, text by text.

    The same order as sorting `(text << 40) | order_key`, from two stable sorts of small integers instead of one
    comparison sort of 64-bit keys: numpy sorts integers of 16 bits or less by radix, in linear time (about a
    quarter of the time here). Ties in frequency keep their hash order because the sorts are stable, and the
    hashes of each text come ascending (`ShingleSets`).
    """
    frequency = (order_key >> _SHIFT).astype(np.uint8)  # capped at 255 by `rarest_first_keys`
    owner_type = np.uint16 if len(sizes) <= 1 << 16 else np.uint32
    owner = np.repeat(np.arange(len(sizes), dtype=owner_type), sizes)
    by_frequency = np.argsort(frequency, kind="stable")
    order = by_frequency[np.argsort(owner[by_frequency], kind="stable")]
    return order_key[order]


def rarest_first_keys(values: UInt64Array) -> UInt64Array:
    """One global order of shingles, rarest first: 40-bit keys of frequency (capped at 255) and hash value.

    Frequencies are counted per hash bucket (low 16 bits): any consistent order is correct, rarer-first is fast.
    The cap is applied to each shingle's count rather than to the whole bucket table: the same keys, from a
    pass over the shingles instead of over all 65,536 buckets.
    """
    buckets = (values & np.uint64(_FREQUENCY_BUCKETS - 1)).astype(np.intp)
    frequency = np.minimum(np.bincount(buckets, minlength=_FREQUENCY_BUCKETS)[buckets], 255).astype(np.uint64)
    return (frequency << _SHIFT) | values


def _token_anchors(token: UInt64Array) -> tuple[Int64Array, Int64Array]:
    """For sorted tokens: where each entry's token group starts, and how many earlier entries it is paired with.

    Capping the pairs per entry at NEAR_DUP_TOKEN_ANCHORS keeps a shingle every text shares from making
    the pair count quadratic.
    """
    position = np.arange(len(token), dtype=np.int64)
    group_start = np.maximum.accumulate(np.where(np.r_[True, token[1:] != token[:-1]], position, 0))
    return group_start, np.minimum(position - group_start, NEAR_DUP_TOKEN_ANCHORS)


def _worth_comparing(sizes: Int64Array, earlier: Int64Array, later: Int64Array, threshold: float) -> BoolArray:
    """The pairs (sorted by later text) kept for the exact check, a bounded number per text.

    The first NEAR_DUP_MAX_COMPARED per text, and of those only the pairs whose size ratio lets the Jaccard
    reach `threshold` (it cannot exceed the smaller set's size over the larger's).
    """
    first_of_text = np.maximum.accumulate(
        np.where(np.r_[True, later[1:] != later[:-1]], np.arange(len(later), dtype=np.int64), 0)
    )
    keep: BoolArray = np.arange(len(later), dtype=np.int64) - first_of_text < NEAR_DUP_MAX_COMPARED
    keep &= _sizes_allow(np.minimum(sizes[earlier], sizes[later]), np.maximum(sizes[earlier], sizes[later]), threshold)
    return keep


def _sizes_allow(small: SizeT, large: SizeT, threshold: float) -> bool | BoolArray:
    """Whether sets of these sizes can reach `threshold` (the Jaccard is at most the smaller size over the larger).

    For one pair (Python integers) or many (arrays): the same float comparison either way.
    """
    allowed: bool | BoolArray = small >= (threshold - _FLOAT_SLACK) * large
    return allowed


def _estimate_gate(
    sets: ShingleSets, left: Int64Array, right: Int64Array, threshold: float
) -> Chunked[tuple[Int64Array, Int64Array]]:
    """The pairs whose MinHash estimate reaches threshold − NEAR_DUP_ESTIMATE_SLACK."""
    rows = _sorted_distinct(np.concatenate([left, right]))
    signatures = yield from minhash_rows(sets, rows)
    left_row, right_row = np.searchsorted(rows, left), np.searchsorted(rows, right)
    keep = np.zeros(len(left), dtype=bool)
    step = max(1, NEAR_DUP_CHUNK // NEAR_DUP_SIGNATURE_LENGTH)
    for start in range(0, len(left), step):
        keep[start : start + step] = _estimates_agree(
            signatures[left_row[start : start + step]], signatures[right_row[start : start + step]], threshold
        )
        yield
    return left[keep], right[keep]


def _estimates_agree(left: UInt64Array, right: UInt64Array, threshold: float) -> BoolArray:
    """For rows of signatures paired up, whether each pair's MinHash estimate reaches threshold − slack."""
    agree: BoolArray = np.count_nonzero(left == right, axis=1) / NEAR_DUP_SIGNATURE_LENGTH >= (
        threshold - NEAR_DUP_ESTIMATE_SLACK
    )
    return agree
