"""The selection's fast paths decide exactly as the plain formulas they replace (old vs new)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.librarian.candidates import SAME_PASSAGE, same_passage

_TOKENS = st.frozensets(st.sampled_from([f"t{i}" for i in range(24)]), max_size=24)


def plain_same_passage(a: frozenset[str], b: frozenset[str]) -> bool:
    """The formula `_versions_disagree` always used: the Jaccard of the two sets, built in full."""
    return bool(a) and bool(b) and len(a & b) / len(a | b) >= SAME_PASSAGE


@settings(max_examples=2_000, deadline=None)
@given(_TOKENS, _TOKENS)
def test_same_passage_equals_the_plain_jaccard(a: frozenset[str], b: frozenset[str]) -> None:
    assert same_passage(a, b) == plain_same_passage(a, b)


def test_same_passage_at_the_threshold_and_across_sizes() -> None:
    # Every size pair up to 12 and every possible overlap: the length bound and the exact test at the edge.
    for size_a in range(13):
        for size_b in range(13):
            for shared in range(min(size_a, size_b) + 1):
                a = frozenset(f"s{i}" for i in range(shared)) | frozenset(f"a{i}" for i in range(size_a - shared))
                b = frozenset(f"s{i}" for i in range(shared)) | frozenset(f"b{i}" for i in range(size_b - shared))
                assert same_passage(a, b) == plain_same_passage(a, b), (size_a, size_b, shared)
    assert same_passage(frozenset({"x", "y"}), frozenset({"x", "z"})) is False  # 1/3
    assert same_passage(frozenset({"x", "y"}), frozenset({"x"})) is True  # exactly 1/2


@settings(max_examples=2_000, deadline=None)
@given(_TOKENS, _TOKENS)
def test_at_one_place_the_smaller_set_mostly_within_the_larger_is_one_passage(
    a: frozenset[str], b: frozenset[str]
) -> None:
    """An excerpt and the whole chunk differ in size however alike: containment, not Jaccard, decides there."""
    contained = bool(a) and bool(b) and len(a & b) / min(len(a), len(b)) >= SAME_PASSAGE
    assert same_passage(a, b, one_place=True) == contained
    assert not same_passage(a, b) or same_passage(a, b, one_place=True)  # only ever more lenient


def test_an_excerpt_is_one_passage_with_its_chunk_only_at_one_place() -> None:
    chunk = frozenset(f"w{i}" for i in range(20))
    excerpt = frozenset({"w1", "w2", "w3", "other"})
    assert same_passage(excerpt, chunk, one_place=True)  # 3 of 4
    assert not same_passage(excerpt, chunk)  # Jaccard 3/21
