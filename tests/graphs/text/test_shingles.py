"""Shingles, Jaccard and MinHash: exact values, properties, and stability across processes."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs.text.shingles import estimate_jaccard, jaccard, minhash_signature, shingles
from tests.support.fresh_interpreter import run_script
from tests.support.live_service import PROJECT_ROOT

# Pinned so that a change to the hash family (which would make signatures from old and new replicas disagree)
# fails here instead of silently degrading de-duplication.
HELLO_WORLD_SIGNATURE_HEAD = [492988002, 500899479, 467827995, 161273401]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", set()),
        ("   ", set()),
        ("ab", {zlib.crc32(b"ab")}),  # shorter than k: the whole text is one shingle
        ("abc", {zlib.crc32(b"abc")}),
        ("ABCD", {zlib.crc32(b"abc"), zlib.crc32(b"bcd")}),  # normalised first
        ("東京都", {zlib.crc32("東京都".encode())}),
    ],
)
def test_shingles(text: str, expected: set[int]) -> None:
    assert shingles(text) == expected


def test_lone_surrogates_do_not_raise() -> None:
    assert len(shingles("\ud800東京\udfff")) == 2


def test_shingles_ignore_case_width_and_spacing() -> None:
    assert shingles("Tokyo  Tower") == shingles("ＴＯＫＹＯ tower")


def test_shingles_reject_non_positive_k() -> None:
    with pytest.raises(ValueError, match="k must be positive"):
        shingles("abc", k=0)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({1, 2, 3}, {1, 2, 3}, 1.0),
        ({1, 2}, {3, 4}, 0.0),
        ({1, 2, 3}, {2, 3, 4}, 0.5),
        (set(), set(), 1.0),  # two blank snippets are duplicates
        (set(), {1}, 0.0),
        ([1, 2, 2], (2, 1), 1.0),  # any collection
    ],
)
def test_jaccard(a: set[int], b: set[int], expected: float) -> None:
    assert jaccard(a, b) == expected


def test_near_duplicates_score_higher_than_unrelated_text() -> None:
    base = shingles("東京タワーの高さは333メートルです。")
    near = shingles("東京タワーの高さは約333メートルです")
    other = shingles("富士山は日本で一番高い山である。")
    assert jaccard(base, near) > 0.6 > 0.1 > jaccard(base, other)


@given(st.text(), st.text())
def test_jaccard_is_symmetric_and_bounded(a: str, b: str) -> None:
    sa, sb = shingles(a), shingles(b)
    assert jaccard(sa, sb) == jaccard(sb, sa)
    assert 0.0 <= jaccard(sa, sb) <= 1.0


@given(st.text())
def test_identical_texts_have_jaccard_one(text: str) -> None:
    assert jaccard(shingles(text), shingles(text)) == 1.0
    signature = minhash_signature(shingles(text))
    assert estimate_jaccard(signature, signature.copy()) == 1.0


@given(st.text(), st.text())
def test_minhash_estimate_is_bounded_and_symmetric(a: str, b: str) -> None:
    sa, sb = minhash_signature(shingles(a)), minhash_signature(shingles(b))
    assert estimate_jaccard(sa, sb) == estimate_jaccard(sb, sa)
    assert 0.0 <= estimate_jaccard(sa, sb) <= 1.0


def test_minhash_estimates_jaccard_without_bias() -> None:
    rng = np.random.default_rng(7)
    errors = []
    for _ in range(200):
        base = "".join(rng.choice(list("abcdefghij"), size=200))
        cut = int(rng.integers(50, 200))
        other = base[:cut] + "".join(rng.choice(list("abcdefghij"), size=int(rng.integers(0, 100))))
        a, b = shingles(base), shingles(other)
        errors.append(estimate_jaccard(minhash_signature(a, 128), minhash_signature(b, 128)) - jaccard(a, b))
    assert abs(float(np.mean(errors))) < 0.02
    assert float(np.std(errors)) < 0.08  # about sqrt(J(1-J)/128)


def test_minhash_signature_shape_and_empty_set() -> None:
    signature = minhash_signature({1, 2, 3}, num_perm=16)
    assert signature.shape == (16,)
    assert signature.dtype == np.uint64
    empty = minhash_signature(set(), num_perm=16)
    assert estimate_jaccard(empty, empty) == 1.0
    assert estimate_jaccard(empty, signature) == 0.0


def test_minhash_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="num_perm"):
        minhash_signature({1}, num_perm=0)
    with pytest.raises(ValueError, match="differ in length"):
        estimate_jaccard(minhash_signature({1}, 8), minhash_signature({1}, 16))


def test_signatures_are_pinned_and_identical_in_another_process() -> None:
    assert minhash_signature(shingles("hello world"))[:4].tolist() == HELLO_WORLD_SIGNATURE_HEAD
    code = (
        "from graphs.text.shingles import minhash_signature, shingles;"
        "print(sorted(shingles('hello world')) == sorted(shingles('HELLO  WORLD')),"
        " minhash_signature(shingles('hello world'))[:4].tolist())"
    )
    out = run_script(code, env={"PYTHONHASHSEED": "12345", "PYTHONPATH": str(PROJECT_ROOT)}).stdout
    assert out.strip() == f"True {HELLO_WORLD_SIGNATURE_HEAD}"
