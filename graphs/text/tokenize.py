"""Tokenisation for BM25, hashing embeddings and query building that works for Japanese as well as English.

Japanese has no spaces, so whitespace tokens are useless for it (BM25 R@5 = 0.02 on JSQuAD against 0.95 with
character bigrams; see ../shared/data/README.md). `tokenize` therefore splits normalised text into script runs:
Latin/digit runs become word tokens and runs of kanji/kana become overlapping character bigrams, which need no
dictionary or morphological analyser. `terms` is the coarser view used to build queries: content words only.

Both run on every search hit of every request, so each is a single compiled-regex `finditer` over the text rather
than per-character Python work.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import resources
from operator import add
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from graphs.config_files import read_text
from graphs.text.blank import has_invisible
from graphs.text.normalize import lower_case, normalize

K = TypeVar("K")

# Script classes, written as regex class bodies so they can be combined. Kana include the prolonged sound mark
# (ー, U+30FC) and iteration marks; the katakana middle dot (・, U+30FB) is punctuation and is left out.
_KANJI = "\u3005-\u3007\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
# ヵ/ヶ are written in katakana but act as kanji in names and counters (関ヶ原, 3ヶ月), so `terms` keeps them with
# the kanji around them instead of splitting there.
_KANJI_LIKE_KANA = "\u30f5\u30f6"
_CJK = _KANJI + _HIRAGANA + _KATAKANA

# A word is a run of letters/digits that are not CJK: the negated class [^\W_<cjk>] is "word characters minus
# underscore minus CJK", so one class covers English, accented Latin, Greek, Cyrillic, Hangul and so on.
# Decimal numbers and versions stay whole (3.14, 2.5.1).
_WORD = rf"\d+(?:\.\d+)+|[^\W_{_CJK}]+"

_TOKEN_RUNS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>{_WORD})")
_KANJI_RUN = rf"[{_KANJI}{_KANJI_LIKE_KANA}]+"
# A katakana run cannot start with ー, so a stray prolonged mark after hiragana (すごーい) is not a term.
_KATAKANA_RUN = rf"[\u30a1-\u30f4\u30f7-\u30fa\u30fd-\u30ff\u31f0-\u31ff][{_KATAKANA}]*"
_TERM_RUNS = re.compile(
    rf"(?P<kanji>{_KANJI_RUN})|(?P<katakana>{_KATAKANA_RUN})|(?P<hiragana>[{_HIRAGANA}]+)|(?P<word>{_WORD})"
)
# `terms_of_many`: the same runs as positional groups (`findall` builds the tuples in C), hiragana runs
# matched but not captured (they are dropped).
_TERM_RUNS_FOUND = re.compile(rf"({_KANJI_RUN})|({_KATAKANA_RUN})|[{_HIRAGANA}]+|({_WORD})")
_HIRAGANA_ONLY = re.compile(f"[{_HIRAGANA}]+")
# `term_postings`: the term runs alone, as plain strings. Hiragana runs are never terms and no other run can
# start on a hiragana character, so skipping them character by character finds the same runs.
_TERM_RUNS_PLAIN = re.compile(rf"{_KANJI_RUN}|{_KATAKANA_RUN}|{_WORD}")


def tokenize(text: str) -> list[str]:
    """Split text into search tokens: words for Latin/digit runs, character bigrams for Japanese runs.

    The text is normalised first (`normalize`), so case and full-width forms do not matter. Punctuation and
    symbols are dropped; numbers are kept. A Japanese run of one character becomes a unigram so that a lone kanji
    (e.g. 年 in "2024年") is not lost.

    Args:
        text: Any text, in any mix of scripts.

    Returns:
        Tokens in text order, duplicates included (BM25 and the embedder need term frequencies).
    """
    return tokenize_normalized(normalize(text))


def tokenize_normalized(normalized: str) -> list[str]:
    """`tokenize` for text already passed through `normalize` (saves normalising twice on hot paths)."""
    tokens: list[str] = []
    for match in _TOKEN_RUNS.finditer(normalized):
        run = match.group()
        if match.lastgroup == "cjk" and len(run) > 1:
            tokens.extend(map(add, run, run[1:]))
        else:
            tokens.append(run)
    return tokens


_CJK_PAIR = re.compile(f"[{_CJK}]{{2}}")
_CJK_CHAR = re.compile(f"[{_CJK}]")


def is_cjk_pair(token: str) -> bool:
    """Whether a token is two CJK characters: present in a normalised text exactly when it is a substring of it."""
    return _CJK_PAIR.fullmatch(token) is not None


def is_cjk_char(text: str) -> bool:
    """Whether `text` is one CJK character (a kanji, kana or iteration mark `tokenize` puts in CJK runs)."""
    return _CJK_CHAR.fullmatch(text) is not None


@lru_cache(maxsize=1)
def _cjk_bounds() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The CJK class as sorted, disjoint code-point ranges [low, high], read from the class text itself."""
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < len(_CJK):
        if i + 2 < len(_CJK) and _CJK[i + 1] == "-":
            ranges.append((ord(_CJK[i]), ord(_CJK[i + 2])))
            i += 3
        else:
            ranges.append((ord(_CJK[i]), ord(_CJK[i])))
            i += 1
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return np.array([r[0] for r in merged], dtype=np.int64), np.array([r[1] for r in merged], dtype=np.int64)


def cjk_code_points(points: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """Which code points are CJK characters (`is_cjk_char` for a whole array at once)."""
    lows, highs = _cjk_bounds()
    codes = points.astype(np.int64)
    slot = np.searchsorted(lows, codes, side="right") - 1
    inside: npt.NDArray[np.bool_] = (slot >= 0) & (codes <= highs[np.maximum(slot, 0)])
    return inside


@lru_cache(maxsize=64)
def _split_wanted(wanted: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Tokens of two CJK characters, and the rest (cached: one question's tokens are asked of every snippet)."""
    pairs = frozenset(t for t in wanted if _CJK_PAIR.fullmatch(t))
    return pairs, wanted - pairs


def tokens_present(normalized: str, wanted: Iterable[str]) -> set[str]:
    """`set(wanted) & set(tokenize_normalized(normalized))`, without building every bigram of the text.

    A token of two CJK characters is a bigram of some CJK run exactly when it occurs in the text (both
    characters are CJK, so the occurrence lies inside one run): a substring test. Every other token is a
    whole word run or a one-character CJK run, found in one pass that skips the (long) CJK runs. For a
    question's dozen tokens against a 150-character snippet this is several times cheaper than
    tokenising the snippet.
    """
    wanted_pairs, others = _split_wanted(wanted if isinstance(wanted, frozenset) else frozenset(wanted))
    present = {t for t in wanted_pairs if t in normalized}
    if others:
        for match in _TOKEN_RUNS.finditer(normalized):
            run = match.group()
            if (match.lastgroup != "cjk" or len(run) == 1) and run in others:
                present.add(run)
    return present


def terms(text: str) -> list[str]:
    """Return the content terms of `text`, in order and without duplicates, for building search queries.

    English: words minus stopwords (graphs/text/stopwords_en.txt). Japanese: the text is cut at script
    boundaries; kanji runs and katakana runs are kept as terms, hiragana runs (particles, inflections, question
    words) are dropped, and so are Japanese question words (graphs/text/question_words_ja.txt, plus 何 + one
    kanji such as 何県). Without a dictionary this is an approximation: a word written in hiragana is lost and
    okurigana are cut off (高さ → 高), which is acceptable for query building because the caller's full-text
    search tokenises the same way.

    Args:
        text: A question or statement.

    Returns:
        The content terms, normalised, first occurrence order.
    """
    stopwords, question_words = stoplists()
    found: dict[str, None] = {}
    for match in _TERM_RUNS.finditer(normalize(text)):
        kind = match.lastgroup
        term = match.group()
        if kind == "hiragana":
            continue
        if kind == "word":
            if term in stopwords:
                continue
        elif term in question_words or (kind == "kanji" and len(term) == 2 and term[0] == "何"):
            continue
        found[term] = None
    return list(found)


def normalized_many(texts: Sequence[str]) -> list[str]:
    """Each text in the form `terms` reads it (`normalize` up to whitespace), normalised together in one pass.

    The texts are joined by newlines, which normalisation neither makes, removes nor composes with
    (see `terms_of_many`); a newline inside a text becomes a space, which no term contains either. So a
    term of `texts[i]` is always a substring of the i-th result, which lets a caller looking for given
    terms skip the texts that cannot contain them.
    """
    if not texts:
        return []
    joined = "\n".join(texts)
    if joined.count("\n") != len(texts) - 1:  # some text holds a newline of its own (rare: titles, snippets)
        joined = "\n".join(text.replace("\n", " ") for text in texts)
    pieces = unicodedata.normalize("NFKC", lower_case(unicodedata.normalize("NFKC", joined))).split("\n")
    if all(map(str.isprintable, pieces)):
        return pieces
    # A text with an invisible character takes `normalize`'s own path (whitespace collapsed there too).
    return [
        piece if piece.isprintable() or not has_invisible(piece) else normalize(text)
        for piece, text in zip(pieces, texts, strict=True)
    ]


def terms_of_many(texts: Sequence[str]) -> list[list[str]]:
    """`[terms(text) for text in texts]`, with the texts normalised together.

    For callers that need the terms of hundreds of short texts at once (every node title of a dashboard):
    per text, normalising and walking match objects is what costs there. Equivalent to `terms` text by
    text because whitespace never belongs to a term, so a newline can separate the texts (`normalize`
    neither makes nor removes one, and no character composes with it; NFKC and case folding work
    character by character up to such a separator). Each text is then scanned on its own, so the
    matches of a 10,000-title board never sit in one list (that many young tuples set off collections).

    Args:
        texts: Questions, statements or titles.

    Returns:
        One list per text, as `terms` returns it.
    """
    if not texts:
        return []
    stopwords, question_words = stoplists()
    out: list[list[str]] = []
    for piece in normalized_many(texts):
        found: dict[str, None] = {}
        for kanji, katakana, word in _TERM_RUNS_FOUND.findall(piece):
            if word:
                if word not in stopwords:
                    found[word] = None
            elif kanji:
                if kanji not in question_words and not (len(kanji) == 2 and kanji[0] == "何"):
                    found[kanji] = None
            elif katakana and katakana not in question_words:
                found[katakana] = None
        out.append(list(found))
    return out


def term_postings(texts: Sequence[str], keys: Sequence[K]) -> dict[str, list[K]]:
    """Each term of `texts` (as `terms` finds them) → the keys of the texts that have it, in text order.

    Terms come in order of first occurrence (text by text, as `terms_of_many` lists them); `keys` holds
    one distinct key per text. What `terms_of_many` gives, inverted, for a caller that wants to know which
    texts share a term (the Organizer's term groups over every title of a board): no list and no dict per
    text, no filtering run by run. Each term's first sighting makes its entry and later ones in the same
    text are skipped by comparing with the last key; the runs `terms` drops are taken out at the end, once
    per distinct term (deleting keeps the order of the others).
    """
    postings: dict[str, list[K]] = {}
    for key, piece in zip(keys, normalized_many(texts), strict=True):
        for term in _TERM_RUNS_PLAIN.findall(piece):
            having = postings.get(term)
            if having is None:
                postings[term] = [key]
            elif having[-1] != key:
                having.append(key)
    for term in _dropped_terms().intersection(postings):
        del postings[term]
    for term in [t for t in postings if len(t) == 2 and t[0] == "何"]:
        del postings[term]
    return postings


@lru_cache(maxsize=1)
def _dropped_terms() -> frozenset[str]:
    """The runs `terms` drops wherever they are: stopwords that are word runs, question words that are CJK runs.

    `terms` checks a word run against the stopwords and a kanji or katakana run against the question
    words. A run's kind shows in its first character (a kanji or katakana run starts with a CJK
    character, a word run never does), so a string in this set is dropped wherever it is found, and
    none other is (besides 何 + one kanji, which `terms` drops by its shape).
    """
    stopwords, question_words = stoplists()
    words = frozenset(w for w in stopwords if not _CJK_CHAR.match(w))
    return words | frozenset(q for q in question_words if _CJK_CHAR.match(q))


def is_function_token(token: str) -> bool:
    """Whether a `tokenize` token is a function word rather than content: an English stopword or pure hiragana.

    Pure-hiragana bigrams are mostly particles and inflections (の, は, です). They cannot be dropped outright
    (some words are written in hiragana), so the hashing embedder weights them down instead.

    Args:
        token: One token as returned by `tokenize`.

    Returns:
        True for function tokens.
    """
    return token in stoplists()[0] or _HIRAGANA_ONLY.fullmatch(token) is not None


def content_tokens(text: str) -> set[str]:
    """The distinct tokens of `text` that are not function tokens (`is_function_token`), by set differences alone.

    For callers that need the content vocabulary of many texts per request: a hiragana-only token is at
    most two characters (`tokenize` cuts Japanese runs into bigrams, and word tokens hold no kana), so
    removing the stopwords and every one- or two-character hiragana string is the same filter as
    `is_function_token` without a regex call per token.
    """
    return set(tokenize(text)).difference(stoplists()[0], _short_hiragana())


@lru_cache(maxsize=1)
def _short_hiragana() -> frozenset[str]:
    """Every hiragana string of one or two characters (about 9,000): the hiragana-only tokens `tokenize` can make."""
    kana = [chr(c) for c in range(0x3041, 0x30A0)]
    return frozenset(kana) | frozenset(a + b for a in kana for b in kana)


def _load_word_list(name: str) -> frozenset[str]:
    """Read a packaged one-word-per-line list, skipping blank lines and `#` comments, normalising each entry."""
    text = read_text(resources.files(__package__).joinpath(name))
    words = (normalize(line) for line in text.splitlines())
    return frozenset(w for w in words if w and not w.startswith("#"))


@lru_cache(maxsize=1)
def stoplists() -> tuple[frozenset[str], frozenset[str]]:
    """Load the English stopwords and Japanese question words once per process, on first use."""
    return _load_word_list("stopwords_en.txt"), _load_word_list("question_words_ja.txt")
