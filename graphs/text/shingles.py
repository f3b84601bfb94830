"""Near-duplicate detection for snippets and bullets: character shingles, Jaccard similarity and MinHash.

Character k-shingles work for Japanese and English alike and catch near-duplicates that differ by a few edits
(two search hits quoting the same passage with different cut-offs, two playbook bullets reworded slightly).
Exact Jaccard is cheap for a handful of snippets; MinHash signatures give a fixed-size summary whose agreement
estimates Jaccard when many texts must be compared or a signature must travel in state.

Every hash here is deterministic (crc32 and a fixed-seed permutation family), never Python's salted `hash`, so
shingles and signatures computed by different replicas or processes agree.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from graphs.text.normalize import normalize

# The hash family is multiply-add-shift (Dietzfelbinger): h(x) = ((a*x + b) mod 2^64) >> 32 for 32-bit x and
# random 64-bit a, b is strongly universal, and numpy's wrapping uint64 arithmetic computes the mod 2^64 for free.
_PERMUTATION_SEED = 20_240_601
# The signature value of an empty shingle set: larger than any real minimum, so it only matches another empty set.
_EMPTY = np.iinfo(np.uint64).max


def shingles(text: str, k: int = 3) -> set[int]:
    """Return the hashed character k-shingles of the normalised text.

    A text shorter than `k` (after normalisation) is one shingle, so short texts still compare; blank text has
    no shingles.

    Args:
        text: Any text.
        k: Shingle length in characters; 3 suits mixed Japanese/English snippets.

    Returns:
        The set of crc32 hashes of the shingles.

    Raises:
        ValueError: If `k` is not positive.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    normalized = normalize(text)
    if not normalized:
        return set()
    if len(normalized) <= k:
        return {_crc32(normalized)}
    return {_crc32(normalized[i : i + k]) for i in range(len(normalized) - k + 1)}


_POLY = np.uint64(1_000_003)
"""The polynomial's base over a shingle's code points (`shingle_array`, and the bulk and set twins in
`graphs.text.near_duplicates`)."""
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(32)


def shingle_array(normalized: str, k: int = 3) -> npt.NDArray[np.uint64]:
    """The shingles of an already-normalised text as a sorted array of distinct 32-bit hashes (vectorised).

    The hot-path twin of `shingles` for code that compares hundreds of snippets per request: the
    k-grams are hashed over code points with numpy (a polynomial over the k characters, then a
    multiplicative mix), which is deterministic in every process like `shingles`, though its values
    differ from `shingles`' crc32 — compare arrays with arrays and sets with sets.

    Args:
        normalized: Text already passed through `normalize`.
        k: Shingle length in characters.

    Returns:
        Sorted, distinct uint64 values below 2^32; empty for blank text.
    """
    if not normalized:
        return np.zeros(0, dtype=np.uint64)
    points = np.frombuffer(normalized.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    if len(points) < k:
        k = len(points)
    hashed = np.zeros(len(points) - k + 1, dtype=np.uint64)
    for offset in range(k):
        hashed = hashed * _POLY + points[offset : len(points) - k + 1 + offset]
    hashed = (hashed * _MIX) >> _SHIFT
    return np.unique(hashed)


def jaccard_arrays(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> float:
    """Exact Jaccard similarity of two `shingle_array` results (two empty arrays count as identical)."""
    if not len(a) and not len(b):
        return 1.0
    intersection = len(np.intersect1d(a, b, assume_unique=True))
    return intersection / (len(a) + len(b) - intersection)


def _crc32(shingle: str) -> int:
    """Hash one shingle; "surrogatepass" because text decoded from JSON may hold lone surrogates."""
    return zlib.crc32(shingle.encode("utf-8", "surrogatepass"))


def jaccard(a: Collection[int], b: Collection[int]) -> float:
    """Exact Jaccard similarity |a ∩ b| / |a ∪ b| of two shingle sets.

    Two empty sets count as identical (1.0): two blank snippets are duplicates of each other.

    Args:
        a: Shingles of the first text.
        b: Shingles of the second text.

    Returns:
        A similarity in [0, 1].
    """
    set_a = a if isinstance(a, set | frozenset) else set(a)
    set_b = b if isinstance(b, set | frozenset) else set(b)
    if not set_a and not set_b:
        return 1.0
    intersection = len(set_a & set_b)
    return intersection / (len(set_a) + len(set_b) - intersection)


@lru_cache(maxsize=8)
def _permutations(num_perm: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """The fixed (a, b) coefficients of `num_perm` hash functions, identical in every process."""
    rng = np.random.default_rng(_PERMUTATION_SEED)
    a = rng.integers(0, np.iinfo(np.uint64).max, size=num_perm, dtype=np.uint64, endpoint=True) | np.uint64(1)
    b = rng.integers(0, np.iinfo(np.uint64).max, size=num_perm, dtype=np.uint64, endpoint=True)
    a.flags.writeable = False
    b.flags.writeable = False
    return a, b


def minhash_signature(shingle_set: Collection[int], num_perm: int = 64) -> npt.NDArray[np.uint64]:
    """Compute the MinHash signature of a shingle set.

    Signatures are only comparable when computed with the same `num_perm`; the hash family depends on nothing
    else, so signatures from different processes are comparable.

    Args:
        shingle_set: Shingle hashes as returned by `shingles` (non-negative integers below 2^32).
        num_perm: Signature length; the estimate's standard error is about sqrt(J(1-J)/num_perm).

    Returns:
        A uint64 array of shape (num_perm,); all values are the maximum uint64 for an empty set.

    Raises:
        ValueError: If `num_perm` is not positive.
    """
    if num_perm <= 0:
        raise ValueError(f"num_perm must be positive, got {num_perm}")
    if len(shingle_set) == 0:
        return np.full(num_perm, _EMPTY, dtype=np.uint64)
    a, b = _permutations(num_perm)
    if isinstance(shingle_set, np.ndarray):
        values = shingle_set.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    else:
        values = np.fromiter(shingle_set, dtype=np.uint64, count=len(shingle_set)) & np.uint64(0xFFFFFFFF)
    hashed = (a[:, None] * values[None, :] + b[:, None]) >> np.uint64(32)
    signature: npt.NDArray[np.uint64] = hashed.min(axis=1)
    return signature


def estimate_jaccard(sig_a: npt.NDArray[np.uint64], sig_b: npt.NDArray[np.uint64]) -> float:
    """Estimate the Jaccard similarity of two texts from their MinHash signatures.

    Args:
        sig_a: Signature of the first text.
        sig_b: Signature of the second text, computed with the same `num_perm`.

    Returns:
        The fraction of agreeing positions, in [0, 1].

    Raises:
        ValueError: If the signatures have different lengths.
    """
    if sig_a.shape != sig_b.shape:
        raise ValueError(f"signatures differ in length: {sig_a.shape} vs {sig_b.shape}")
    if sig_a.size == 0:
        return 1.0
    return float(np.count_nonzero(sig_a == sig_b)) / sig_a.size
