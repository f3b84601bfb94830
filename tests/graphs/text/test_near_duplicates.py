"""The shared near-duplicate module: bulk results equal the one-text functions, pairs equal an all-pairs
search, and the work per text is bounded whatever the input (counted, not timed)."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.chunked import finish
from graphs.text.near_duplicates import (
    ALL_PAIRS_MAX_TEXTS,
    FEW_TEXTS_MAX_CHARS,
    NEAR_DUP_ESTIMATE_SLACK,
    NEAR_DUP_MAX_COMPARED,
    NEAR_DUP_SIGNATURE_LENGTH,
    NEAR_DUP_TOKEN_ANCHORS,
    NearDuplicates,
    SearchPath,
    find_near_duplicates,
    is_near_duplicate,
    jaccard_of_pairs,
    minhash_rows,
    near_duplicates,
    search_path,
    shingle_set,
    shingle_sets,
)
from graphs.text.normalize import normalize
from graphs.text.shingles import jaccard_arrays, minhash_signature, shingle_array

ALPHABET = "東京タワー高さ富士山ABCabc 。、0123\ud800"
texts = st.lists(st.text(alphabet=ALPHABET, max_size=40).map(normalize), max_size=12)


def all_pairs(normalized: list[str], threshold: float) -> list[list[int]]:
    """The rule applied to every pair, as the Librarian did before the bulk search: the oracle."""
    sets = [shingle_array(t) for t in normalized]
    signatures = [minhash_signature(s, NEAR_DUP_SIGNATURE_LENGTH) for s in sets]
    return [
        [
            i
            for i in range(j)
            if len(sets[j])
            and np.mean(signatures[i] == signatures[j]) >= threshold - NEAR_DUP_ESTIMATE_SLACK
            and jaccard_arrays(sets[j], sets[i]) >= threshold
        ]
        for j in range(len(normalized))
    ]


@settings(deadline=None)  # numpy work: a loaded machine must not fail it on time
@given(texts)
def test_bulk_shingles_and_signatures_equal_the_one_text_functions(normalized: list[str]) -> None:
    sets = finish(shingle_sets(normalized))
    assert len(sets) == len(normalized)
    signatures = finish(minhash_rows(sets, np.arange(len(normalized), dtype=np.int64)))
    for index, text in enumerate(normalized):
        assert sets.row(index).tolist() == shingle_array(text).tolist()
        assert signatures[index].tolist() == minhash_signature(shingle_array(text), NEAR_DUP_SIGNATURE_LENGTH).tolist()


@settings(deadline=None)  # numpy work: a loaded machine must not fail it on time
@given(texts, st.data())
def test_bulk_jaccard_equals_the_pairwise_one(normalized: list[str], data: st.DataObject) -> None:
    if not normalized:
        return
    index = st.integers(0, len(normalized) - 1)
    pairs = data.draw(st.lists(st.tuples(index, index), max_size=20))
    left = np.array([a for a, _ in pairs], dtype=np.int64)
    right = np.array([b for _, b in pairs], dtype=np.int64)
    sets = finish(shingle_sets(normalized))
    similarity = finish(jaccard_of_pairs(sets, left, right))
    expected = [jaccard_arrays(sets.row(a), sets.row(b)) for a, b in pairs]
    assert similarity.tolist() == expected


PATHS: list[SearchPath] = ["sets", "all_pairs", "prefix"]


def search(normalized: list[str], threshold: float, path: SearchPath) -> NearDuplicates:
    return finish(find_near_duplicates(normalized, threshold, path=path))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from([0.1, 0.3, 0.5, 0.65, 0.8, 0.9, 1.0]))
def test_pairs_equal_an_all_pairs_search_when_no_cap_binds(
    path: SearchPath, normalized: list[str], threshold: float
) -> None:
    # At most NEAR_DUP_TOKEN_ANCHORS + 1 texts: neither cap can bind, so every way of searching must be exact.
    normalized = normalized[: NEAR_DUP_TOKEN_ANCHORS + 1]
    assert search(normalized, threshold, path).earlier == all_pairs(normalized, threshold)


@settings(max_examples=200, deadline=None)
@given(texts, st.sampled_from([0.3, 0.65, 0.8, 1.0]))
def test_python_sets_count_the_same_work_as_every_pair_in_bulk(normalized: list[str], threshold: float) -> None:
    # Both compare every pair of non-empty texts whose sizes allow the threshold: the same counts, not only pairs.
    normalized = normalized[:ALL_PAIRS_MAX_TEXTS]
    assert search(normalized, threshold, "sets") == search(normalized, threshold, "all_pairs")


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        ([], "sets"),
        (["東京タワー"] * (NEAR_DUP_TOKEN_ANCHORS + 1), "sets"),
        (["東京タワーの高さ" * 20] * (NEAR_DUP_TOKEN_ANCHORS + 1), "all_pairs"),  # past FEW_TEXTS_MAX_CHARS
        (["東京タワー"] * (NEAR_DUP_TOKEN_ANCHORS + 2), "prefix"),  # a cap could bind: prefix filtering
    ],
)
def test_search_path_takes_a_shortcut_only_where_no_cap_can_bind(texts: list[str], expected: SearchPath) -> None:
    assert sum(map(len, texts)) <= FEW_TEXTS_MAX_CHARS or expected != "sets"
    assert search_path(texts) == expected


@settings(deadline=None)
@given(st.text(st.characters(exclude_categories=()), max_size=30))  # lone surrogates included
def test_python_shingle_hashes_equal_the_numpy_ones(text: str) -> None:
    assert shingle_set(text) == set(shingle_array(text).tolist())


@pytest.mark.parametrize("text", ["", "a", "ab", "abc", "\ud800", "a\ud800b", "😀😀😀", "東京タワー"])
def test_python_shingle_hashes_equal_the_numpy_ones_at_the_edges(text: str) -> None:
    assert shingle_set(text) == set(shingle_array(text).tolist())


@pytest.mark.parametrize("path", PATHS)
def test_a_pair_that_passes_the_exact_check_can_still_fail_the_estimate(path: SearchPath) -> None:
    # Jaccard exactly 2/4 = 0.5 reaches the threshold; the MinHash estimate does not, and both must pass.
    found = search(["gadea", "gadec"], 0.5, path)
    assert found.verified == 1
    assert found.earlier == [[], []]


@settings(max_examples=200, deadline=None)
@given(texts, st.sampled_from([0.1, 0.5, 0.8, 1.0]))
def test_every_way_verifies_the_same_pairs(normalized: list[str], threshold: float) -> None:
    normalized = normalized[:ALL_PAIRS_MAX_TEXTS]
    found = [search(normalized, threshold, path) for path in PATHS]
    assert len({(str(f.earlier), f.verified) for f in found}) == 1


@pytest.mark.parametrize(
    ("texts", "threshold", "path"),
    [
        (["abc", "xyz"], 0.0, None),  # at 0, texts sharing nothing would be near-duplicates
        (["abc", "xyz"], 1.5, None),
        (["abc"] * (ALL_PAIRS_MAX_TEXTS + 1), 0.8, "sets"),  # a cap could bind: the shortcut is not exact
        (["abc"] * (ALL_PAIRS_MAX_TEXTS + 1), 0.8, "all_pairs"),
    ],
)
def test_refuses_what_it_cannot_answer_exactly(texts: list[str], threshold: float, path: SearchPath | None) -> None:
    with pytest.raises(ValueError):
        finish(find_near_duplicates(texts, threshold, path=path))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.95])
def test_pairs_equal_an_all_pairs_search_on_edited_copies(path: SearchPath, threshold: float) -> None:
    base = "東京タワーは東京都港区芝公園にある総合電波塔で、高さは333メートルである。1958年に竣工した。"
    edits = [
        base,
        base.replace("総合", ""),
        base + "観光客が多い。",
        "富士山は日本一高い山である。",
        base[5:],
        base[:30],
    ]
    normalized = [normalize(t) for t in edits * 2]
    if path != "prefix":  # the shortcuts take only as many texts as no cap can bind for
        normalized = normalized[:ALL_PAIRS_MAX_TEXTS]
    found = search(normalized, threshold, path)
    assert found.earlier == all_pairs(normalized, threshold)
    assert 0 in found.earlier[6]  # an exact copy is a near-duplicate at any threshold


def test_is_near_duplicate() -> None:
    tower = "東京タワーの高さは333メートルです。東京タワーは港区にあります。"
    assert is_near_duplicate(tower, "  " + tower.replace("333", "３３３") + " ", 0.8)  # width and spacing
    assert not is_near_duplicate(tower, "富士山は静岡県と山梨県にまたがる。", 0.8)


def shared_base_unique_tail(count: int, tail: int = 200) -> list[str]:
    """Issue 15's shape: a 1,000-character base shared by all plus a unique tail (Jaccard about 0.7 at
    200 characters), so every pair passes the MinHash gate and fails the exact check."""
    rng = random.Random(15)
    base = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(1_000))
    return [base + "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(tail)) for _ in range(count)]


def same_text_other_figures(count: int) -> list[str]:
    """Near-identical texts (every pair is a near-duplicate): the densest possible candidate buckets."""
    return [normalize(f"東京タワーの高さは{i}メートルで、港区芝公園にある電波塔である。") for i in range(count)]


def tiny(count: int) -> list[str]:
    return [normalize(f"h{i}") for i in range(count)]


@pytest.mark.parametrize("shape", [shared_base_unique_tail, same_text_other_figures, tiny])
def test_work_per_text_is_bounded_whatever_the_input(shape: Callable[[int], list[str]]) -> None:
    for count in (200, 2_000):
        cost = near_duplicates(shape(count), 0.8)
        # An all-pairs search compares count²/2 pairs (2,000,000 at 2,000 texts); this is linear.
        assert cost.verified <= cost.compared <= NEAR_DUP_MAX_COMPARED * count


def test_a_shared_base_with_long_unique_tails_yields_almost_no_candidates() -> None:
    # The rarest fifth of each set is (almost all) its own tail, so prefix filtering hardly pairs any two.
    assert near_duplicates(shared_base_unique_tail(500, tail=400), 0.8).compared < 50


def test_with_caps_binding_every_pair_found_is_still_a_near_duplicate() -> None:
    normalized = same_text_other_figures(120) + shared_base_unique_tail(60)
    found = near_duplicates(normalized, 0.8)
    oracle = all_pairs(normalized, 0.8)
    assert all(set(f) <= set(o) for f, o in zip(found.earlier, oracle, strict=True))
    assert sum(map(len, found.earlier)) > 0


def test_large_inputs_pause_between_bounded_chunks() -> None:
    pauses = 0

    def count() -> None:
        nonlocal pauses
        pauses += 1

    finish(find_near_duplicates(shared_base_unique_tail(300), 0.8), count)
    assert pauses > 10  # ~250 KB of text: many chunks, each a pause for the deadline and the event loop


def test_a_failing_pause_stops_the_work() -> None:
    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        finish(find_near_duplicates(shared_base_unique_tail(50), 0.8), stop)
