"""`tokens_present` answers "which of these tokens does the text have" exactly as tokenising it would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.text.normalize import normalize
from graphs.text.tokenize import tokenize, tokenize_normalized, tokens_present

ALPHABET = "東京タワー高さ富士山のはがヶ年月ABCabc 0123.,。、・ー"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.text(alphabet=ALPHABET, max_size=20))
def test_tokens_present_equals_the_intersection_with_the_tokens(text: str, question: str) -> None:
    normalized = normalize(text)
    # The question's own tokens plus arbitrary short strings: pairs, single characters, words, non-tokens.
    wanted = frozenset(tokenize(question)) | {question[i : i + n] for n in (1, 2, 3) for i in range(len(question))}
    assert tokens_present(normalized, wanted) == wanted & set(tokenize_normalized(normalized))


def test_tokens_present_examples() -> None:
    text = normalize("東京タワーの高さは333メートル。年 in 2024")
    wanted = {"東京", "高さ", "333", "年", "タワ", "メ", "in", "ワー", "京タ", "33", "の高"}
    assert tokens_present(text, wanted) == {"東京", "高さ", "333", "年", "タワ", "in", "ワー", "京タ", "の高"}
