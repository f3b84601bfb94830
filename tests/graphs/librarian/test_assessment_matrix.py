"""The scorer's bulk views equal what asking each snippet on its own would give.

`assess` reads which question tokens each snippet holds from one matrix built for all snippets at once
(code-point pairs for CJK bigrams) and groups candidates by identical rows; both must agree exactly with
`tokens_present` snippet by snippet and with `np.unique(axis=0)`.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.librarian.assessment import _distinct_rows, _longest_runs, _presence
from graphs.text.normalize import normalize
from graphs.text.tokenize import tokenize, tokens_present

# CJK (kanji, kana, ヶ, an astral kanji), Latin words and digits, punctuation and spaces.
ALPHABET = "東京タワー高さ富士山のはがヶ年月\U00020b9fABCabc 0123.,。、・ー"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=12),
    st.text(alphabet=ALPHABET, max_size=20),
)
def test_presence_matrix_equals_tokens_present_per_snippet(texts: list[str], question: str) -> None:
    normalized = [normalize(t) for t in texts]
    extra = [question[i : i + n] for n in (1, 2, 3) for i in range(len(question))]
    asked = list(dict.fromkeys([*tokenize(question), *(e for e in extra if e.strip())]))
    present = _presence(normalized, {token: j for j, token in enumerate(asked)})
    assert present.shape == (len(normalized), len(asked))
    for i, text in enumerate(normalized):
        held = tokens_present(text, frozenset(asked))
        assert {token for j, token in enumerate(asked) if present[i, j]} == held, (text, asked)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 80), st.integers(0, 2**32 - 1))
def test_distinct_rows_equal_numpy_unique(rows: int, columns: int, seed: int) -> None:
    # Few distinct rows (repeats) and many columns (beyond one packed word) both happen in real pools.
    generator = np.random.default_rng(seed)
    base = generator.random((max(1, rows // 3), columns)) < 0.4
    matrix = base[generator.integers(0, len(base), rows)]
    distinct, which = _distinct_rows(matrix)
    assert np.array_equal(distinct[which], matrix)
    assert len(distinct) == len(np.unique(matrix, axis=0))


def longest_run(row: list[bool]) -> int:
    best = run = 0
    for held in row:
        run = run + 1 if held else 0
        best = max(best, run)
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=7, max_size=7), min_size=1, max_size=20))
def test_longest_runs_count_each_row_as_a_loop_would(rows: list[list[bool]]) -> None:
    assert _longest_runs(np.array(rows, dtype=bool)).tolist() == [longest_run(row) for row in rows]
    assert _longest_runs(np.zeros((len(rows), 0), dtype=bool)).tolist() == [0] * len(rows)
    assert _longest_runs(np.zeros((0, 7), dtype=bool)).tolist() == []
