"""The embedded default embedder: feature hashing of character n-grams, with no model and no network.

It lets vector search (ACE hybrid search, Librarian de-duplication) work on a fresh machine with no API key.
Features are the `tokenize()` tokens (character bigrams for Japanese, words for Latin and other spaced scripts)
plus character trigrams of those words, so inflections and typos still overlap (retrieve/retrieval). Each
feature is hashed with blake2b, not Python's salted `hash`, so vectors are identical across processes and
instances; that matters because vectors are cached by content hash and compared between replicas.

It is a lexical model: it finds paraphrases only as far as they share character n-grams. It has no IDF (an
embedder sees one text at a time), so sublinear term frequency (1 + log tf) keeps repeated function words from
dominating.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from graphs.text.tokenize import is_function_token, tokenize

# Above this many texts the async methods move the work to a thread so the event loop keeps serving.
_INLINE_ASYNC_LIMIT = 256


# Relative weights. Function tokens (English stopwords, pure-hiragana bigrams such as です/ある) are down-weighted
# rather than dropped: on JSQuAD this lifts recall@5 from 0.90 to 0.91 without zeroing texts made only of them.
# Trigrams are weighted below whole words because a word contributes several of them.
_FUNCTION_WEIGHT = 0.25
_TRIGRAM_WEIGHT = 0.5
# Trigram features carry a prefix that `tokenize` can never produce, so "the" the word and "the" the trigram
# (of "other") are different features.
_TRIGRAM_PREFIX = "#"


def _stable_hash(feature: str) -> int:
    """A 64-bit hash that is the same in every process (Python's `hash` of str is salted per process)."""
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@lru_cache(maxsize=1 << 17)
def _token_features(token: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The hashed features one token contributes, with their base weights; cached because tokens recur.

    A token contributes itself and, if it is a content word, its boundary-marked character trigrams. Japanese
    tokens are already bigrams (never longer than two characters), and numbers are left whole because 2023 and
    2024 sharing trigrams is noise, not similarity.
    """
    if is_function_token(token):
        return (_stable_hash(token),), (_FUNCTION_WEIGHT,)
    hashes = [_stable_hash(token)]
    weights = [1.0]
    if len(token) > 2 and not token[0].isdigit():
        marked = f"<{token}>"
        for i in range(len(marked) - 2):
            hashes.append(_stable_hash(_TRIGRAM_PREFIX + marked[i : i + 3]))
            weights.append(_TRIGRAM_WEIGHT)
    return tuple(hashes), tuple(weights)


class HashingEmbeddings(Embeddings):
    """Deterministic feature-hashing embeddings: unit-length float vectors of length `dim`, zero for empty text."""

    def __init__(self, dim: int = 512) -> None:
        """Create an embedder producing `dim`-dimensional vectors.

        Args:
            dim: Number of hash buckets (the vector length). More buckets mean fewer collisions; 512 keeps
                cosine search over thousands of bullets cheap.

        Raises:
            ValueError: If `dim` is not positive.
        """
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim

    def embed_matrix(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` into a float32 matrix of shape (len(texts), dim) with L2-normalised (or zero) rows.

        This is the fast path: all features of the batch are scattered into the matrix with one `bincount`.

        Args:
            texts: The texts to embed.

        Returns:
            One row per text.
        """
        # Python only walks distinct tokens and extends lists with cached tuples; all per-feature arithmetic
        # happens in numpy below.
        hashes: list[int] = []
        weights: list[float] = []
        term_frequencies: list[int] = []  # one per distinct token of each text
        token_sizes: list[int] = []  # features per distinct token
        text_sizes: list[int] = []  # features per text
        for text in texts:
            size = 0
            for token, tf in Counter(tokenize(text)).items():
                token_hashes, token_weights = _token_features(token)
                hashes.extend(token_hashes)
                weights.extend(token_weights)
                term_frequencies.append(tf)
                token_sizes.append(len(token_hashes))
                size += len(token_hashes)
            text_sizes.append(size)
        if not hashes:
            return np.zeros((len(texts), self.dim), dtype=np.float32)
        hash_array = np.array(hashes, dtype=np.uint64)
        buckets = (hash_array % np.uint64(self.dim)).astype(np.int64)
        # The top bit chooses the sign, so collisions cancel out on average instead of piling up.
        signs = np.where((hash_array >> np.uint64(63)) == 1, -1.0, 1.0)
        rows = np.repeat(np.arange(len(texts), dtype=np.int64), text_sizes)
        sublinear_tf = 1.0 + np.log(np.array(term_frequencies, dtype=np.float64))
        values = signs * np.array(weights) * np.repeat(sublinear_tf, token_sizes)
        matrix = np.bincount(rows * self.dim + buckets, weights=values, minlength=len(texts) * self.dim)
        matrix = matrix.reshape(len(texts), self.dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix.astype(np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents; identical to `embed_query` for each text (the model is symmetric).

        Args:
            texts: The texts to embed.

        Returns:
            One vector per text.
        """
        result: list[list[float]] = self.embed_matrix(texts).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """Embed one query.

        Args:
            text: The query text.

        Returns:
            Its vector.
        """
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents without a thread hop for small batches (the work takes microseconds per text).

        Args:
            texts: The texts to embed.

        Returns:
            One vector per text.
        """
        if len(texts) <= _INLINE_ASYNC_LIMIT:
            return self.embed_documents(texts)
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Embed one query inline (see `aembed_documents`).

        Args:
            text: The query text.

        Returns:
            Its vector.
        """
        return self.embed_query(text)
