"""The near-duplicate search's cheaper steps give exactly what the plain formulas they replace gave (old vs new)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.chunked import finish
from graphs.text.near_duplicates import (
    ShingleSets,
    _candidate_pairs,
    _rarest_first_within_texts,
    _token_anchors,
    _worth_comparing,
    rarest_first_keys,
    rows_fit,
    shingle_sets,
)
from graphs.text.shingles import shingle_array

_FREQUENCY_BUCKETS = 1 << 16


def plain_rarest_first_keys(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The order keys as `_prefix_entries` built them before: the whole bucket table capped, then gathered."""
    buckets = (values & np.uint64(_FREQUENCY_BUCKETS - 1)).astype(np.intp)
    frequency = np.minimum(np.bincount(buckets, minlength=_FREQUENCY_BUCKETS), 255).astype(np.uint64)
    return (frequency[buckets] << np.uint64(32)) | values


@settings(deadline=None)
@given(st.lists(st.integers(0, (1 << 32) - 1), max_size=400), st.integers(0, 600))
def test_rarest_first_keys_equal_the_capped_bucket_table(values: list[int], repeats: int) -> None:
    # `repeats` copies of one bucket push its count past the cap of 255.
    array = np.array([*values, *([7] * repeats)], dtype=np.uint64)
    assert rarest_first_keys(array).tolist() == plain_rarest_first_keys(array).tolist()


@settings(deadline=None)
@given(st.lists(st.text(alphabet="abcあいう東京 ", max_size=12), max_size=30))
def test_shingle_set_sizes_equal_a_count_per_text(texts: list[str]) -> None:
    # Sizes now come from where each text's run starts in the sorted keys; they were a bincount of the owners.
    sets = finish(shingle_sets(texts))
    assert sets.sizes.tolist() == [len(sets.row(i)) for i in range(len(texts))]
    assert sets.sizes.tolist() == [
        len({text[k : k + 3] for k in range(max(1, len(text) - 2))}) if text else 0 for text in texts
    ]


def plain_rarest_first_within_texts(order_key: npt.NDArray[np.uint64], sizes: npt.NDArray[np.int64]) -> list[int]:
    """The order `_prefix_entries` sorted each text's keys in before: one sort of (text << 40) | order key."""
    texts = np.arange(len(sizes), dtype=np.uint64)
    keyed = np.repeat(texts << np.uint64(40), sizes) | order_key
    keyed.sort()
    ordered: list[int] = (keyed & np.uint64((1 << 40) - 1)).tolist()
    return ordered


@settings(deadline=None)
@given(st.lists(st.text(alphabet="abcあいう東京 ", max_size=14), max_size=40), st.integers(0, 300))
def test_rarest_first_within_texts_equals_one_sort_of_text_and_key(texts: list[str], repeats: int) -> None:
    # Repeating one text pushes its shingles' buckets past the frequency cap, so ties in frequency are common.
    sets = finish(shingle_sets([*texts, *(["あいう東京"] * repeats)]))
    order_key = rarest_first_keys(sets.values)
    assert _rarest_first_within_texts(order_key, sets.sizes).tolist() == plain_rarest_first_within_texts(
        order_key, sets.sizes
    )


def test_rarest_first_within_texts_past_sixteen_bit_text_indexes() -> None:
    # Texts without shingles (blank) take no entries, so a chunk can hold more texts than 16 bits number.
    sizes = np.zeros(70_000, dtype=np.int64)
    sizes[[3, 65_540, 69_999]] = [4, 3, 5]
    rng = np.random.default_rng(5)
    runs = [np.sort(rng.integers(0, 1 << 32, size, dtype=np.uint64)) for size in sizes[sizes > 0]]
    order_key = rarest_first_keys(np.concatenate(runs))
    assert _rarest_first_within_texts(order_key, sizes).tolist() == plain_rarest_first_within_texts(order_key, sizes)


@pytest.mark.parametrize(
    ("texts", "as_rows"),
    [
        pytest.param(
            ["東京タワーの高さは333メートル", "ababab", "a", "ab", "", "東京タワー"] * 4, True, id="matrix rows"
        ),
        pytest.param(
            ["東京タワーの高さは" * 500, *(["ab", "abc", "x", ""] * 30)], False, id="one long text: one key sort"
        ),
    ],
)
def test_shingle_sets_equal_each_text_alone_whichever_sort_runs(texts: list[str], as_rows: bool) -> None:
    # Each text's distinct shingles are sorted as rows of a matrix unless one text is far longer than the rest.
    shingles = sum(max(len(text) - 2, 1) for text in texts if text)
    assert rows_fit(len(texts), max(max(len(text) - 2, 1) for text in texts), shingles) is as_rows
    sets = finish(shingle_sets(texts))
    assert [sets.row(i).tolist() for i in range(len(texts))] == [shingle_array(text).tolist() for text in texts]


def plain_prefix_entries(sets: ShingleSets, threshold: float) -> npt.NDArray[np.uint64]:
    """Every text's prefix entries, keyed (token, text), as `_prefix_entries` built them before: one sort of all."""
    sizes = sets.sizes
    order_key = rarest_first_keys(sets.values)
    needed = np.maximum(np.ceil(threshold * sizes - 1e-9).astype(np.int64), 1)
    prefix = np.where(sizes > 0, sizes - needed + 1, 0)
    texts = np.arange(len(sizes), dtype=np.uint64)
    ordered = np.repeat(texts << np.uint64(40), sizes) | order_key
    ordered.sort()
    first = np.concatenate([np.arange(sets.offsets[t], sets.offsets[t] + prefix[t]) for t in range(len(sizes))])
    token = ordered[first.astype(np.int64)] & np.uint64((1 << 40) - 1)
    keyed: npt.NDArray[np.uint64] = (token << np.uint64(24)) | np.repeat(texts, prefix)
    return keyed


def plain_candidate_pairs(sets: ShingleSets, threshold: float) -> tuple[list[int], list[int]]:
    """`_candidate_pairs` over every prefix entry, the shingles no other text holds included (the oracle)."""
    n = len(sets)
    if n < 2 or not len(sets.values):
        return [], []
    keyed = plain_prefix_entries(sets, threshold)
    keyed.sort()
    text = (keyed & np.uint64((1 << 24) - 1)).astype(np.int64)
    group_start, anchors = _token_anchors(keyed >> np.uint64(24))
    total = int(anchors.sum())
    if not total:
        return [], []
    later = np.repeat(text, anchors)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(anchors) - anchors, anchors)
    earlier = text[np.repeat(group_start, anchors) + within]
    pair_keys = np.unique(later * n + earlier)
    later, earlier = pair_keys // n, pair_keys % n
    keep = _worth_comparing(sets.sizes, earlier, later, threshold)
    return earlier[keep].tolist(), later[keep].tolist()


@settings(deadline=None, max_examples=200)
@given(
    st.lists(st.text(alphabet="東京タワー高さab ", min_size=0, max_size=30), max_size=40),
    st.integers(0, 40),
    st.floats(0.3, 1.0),
)
def test_candidate_pairs_equal_those_of_every_prefix_entry(texts: list[str], copies: int, threshold: float) -> None:
    # Copies of one text make shingles many texts share, so the per-shingle and per-text caps bind.
    sets = finish(shingle_sets([*texts, *(["東京タワーの高さ"] * copies)]))
    left, right = finish(_candidate_pairs(sets, threshold))
    assert (left.tolist(), right.tolist()) == plain_candidate_pairs(sets, threshold)
