"""The near-duplicate search's cheaper steps give exactly what the plain formulas they replace gave (old vs new)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.chunked import finish
from graphs.text.near_duplicates import rarest_first_keys, shingle_sets

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
