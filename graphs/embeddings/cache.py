"""An in-process LRU cache in front of any embedder, keyed by content hash.

Playbook bullets and search snippets come back request after request (the service is stateless, so the playbook
travels with every ACE call); re-embedding them each time would cost a provider round-trip, or for the hashing
embedder CPU, per bullet per query. The cache is only an optimisation: a cold or disabled cache gives the same
vectors, so any replica can serve any request.

Keys are (model, kind, sha256 of the text): the model name keeps vectors of different embedders apart, and the
kind ("document" or "query") matters because providers such as Gemini embed the two differently.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import msgspec
import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

Kind = Literal["document", "query"]
_Key = tuple[str, Kind, bytes]
_Vector = npt.NDArray[np.float32]
# What an inner model hands back: lists of floats (the Embeddings interface) or a matrix (MatrixEmbeddings).
_Rows = Sequence[Sequence[float]] | npt.NDArray[np.float32]
INLINE_MATRIX_TEXTS = 256
"""Above this many texts a matrix embedder runs on a worker thread, so the event loop keeps serving."""


@runtime_checkable
class MatrixEmbeddings(Protocol):
    """An embedder that can return a float32 matrix directly (the hashing embedder does)."""

    def embed_matrix(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Embed texts into one row each."""
        ...


class CacheStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counters for the readiness and benchmark output."""

    hits: int
    misses: int
    size: int
    max_entries: int


class CachedEmbeddings(Embeddings):
    """Wraps an embedder with a bounded, thread-safe LRU cache; only cache misses reach the inner model.

    Vectors are stored as read-only float32 arrays (half the memory of float64, a fraction of a list of Python
    floats). Two threads missing on the same text at the same time may both embed it; the result is the same,
    so the lock only guards the dictionary, never a model call.
    """

    def __init__(self, inner: Embeddings, *, model: str, max_entries: int = 50_000) -> None:
        """Wrap `inner`.

        Args:
            inner: The embedder that computes vectors on a miss.
            model: A name identifying the inner model and its settings (see `factory.describe`); part of every key.
            max_entries: Most vectors kept; the least recently used are evicted first. 0 disables caching.

        Raises:
            ValueError: If `max_entries` is negative.
        """
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self.inner = inner
        self.model = model
        self.max_entries = max_entries
        self._entries: OrderedDict[_Key, _Vector] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        inner_dim = getattr(inner, "dim", None)
        self._dim: int | None = inner_dim if isinstance(inner_dim, int) else None

    @property
    def stats(self) -> CacheStats:
        """A snapshot of the hit/miss counters and the current size."""
        with self._lock:
            return CacheStats(
                hits=self._hits, misses=self._misses, size=len(self._entries), max_entries=self.max_entries
            )

    def clear(self) -> None:
        """Drop every cached vector and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._hits = 0
            self._misses = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents, sending only the cache misses to the inner model, in one batch.

        Args:
            texts: The texts to embed; order is preserved and repeated texts are embedded once.

        Returns:
            One vector per text.
        """
        return [vector.tolist() for vector in self._embed(texts, "document")]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query, from the cache if it was embedded as a query before.

        Args:
            text: The query text.

        Returns:
            Its vector.
        """
        result: list[float] = self._embed_query(text).tolist()
        return result

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async `embed_documents`: misses go to the inner model's `aembed_documents`.

        Args:
            texts: The texts to embed; order is preserved and repeated texts are embedded once.

        Returns:
            One vector per text.
        """
        return [vector.tolist() for vector in await self._aembed(texts, "document")]

    async def aembed_query(self, text: str) -> list[float]:
        """Async `embed_query`: a miss goes to the inner model's `aembed_query`.

        Args:
            text: The query text.

        Returns:
            Its vector.
        """
        key = self._key(text, "query")
        vector = self._lookup([key])[0]
        if vector is None:
            vector = self._store({key: await self.inner.aembed_query(text)})[key]
        result: list[float] = vector.tolist()
        return result

    def embed_matrix(self, texts: list[str], kind: Kind = "document") -> npt.NDArray[np.float32]:
        """Embed texts into a float32 matrix of shape (len(texts), dim), for vectorised cosine search.

        Args:
            texts: The texts to embed.
            kind: Embed them as documents (default) or as queries.

        Returns:
            One row per text; shape (0, dim) for no texts (dim 0 if it is not known yet).
        """
        return self._stack(self._embed(texts, kind))

    async def aembed_matrix(self, texts: list[str], kind: Kind = "document") -> npt.NDArray[np.float32]:
        """Async `embed_matrix`.

        Args:
            texts: The texts to embed.
            kind: Embed them as documents (default) or as queries.

        Returns:
            One row per text; shape (0, dim) for no texts (dim 0 if it is not known yet).
        """
        return self._stack(await self._aembed(texts, kind))

    def _embed_query(self, text: str) -> _Vector:
        key = self._key(text, "query")
        vector = self._lookup([key])[0]
        if vector is None:
            vector = self._store({key: self.inner.embed_query(text)})[key]
        return vector

    def _embed(self, texts: list[str], kind: Kind) -> list[_Vector]:
        keys = [self._key(text, kind) for text in texts]
        found = self._lookup(keys)
        missing = _missing(texts, keys, found)
        computed = self._embed_missing(list(missing.values()), kind) if missing else []
        return _fill(keys, found, self._store(dict(zip(missing, computed, strict=True))))

    async def _aembed(self, texts: list[str], kind: Kind) -> list[_Vector]:
        keys = [self._key(text, kind) for text in texts]
        found = self._lookup(keys)
        missing = _missing(texts, keys, found)
        computed = await self._aembed_missing(list(missing.values()), kind) if missing else []
        return _fill(keys, found, self._store(dict(zip(missing, computed, strict=True))))

    def _embed_missing(self, texts: list[str], kind: Kind) -> _Rows:
        if kind == "query":
            return [self.inner.embed_query(text) for text in texts]
        if isinstance(self.inner, MatrixEmbeddings):
            # Skips a round-trip through lists of Python floats, which costs more than hashing the text.
            return self.inner.embed_matrix(texts)
        return self.inner.embed_documents(texts)

    async def _aembed_missing(self, texts: list[str], kind: Kind) -> _Rows:
        if kind == "query":
            # The Embeddings interface has no batch query call; concurrent calls at least overlap the round-trips.
            return list(await asyncio.gather(*(self.inner.aembed_query(text) for text in texts)))
        if isinstance(self.inner, MatrixEmbeddings):
            # As in `_embed_missing`: lists of Python floats for 20,000 texts took 330 MB at 512 dimensions.
            if len(texts) <= INLINE_MATRIX_TEXTS:
                return self.inner.embed_matrix(texts)
            return await asyncio.to_thread(self.inner.embed_matrix, texts)
        return await self.inner.aembed_documents(texts)

    def _key(self, text: str, kind: Kind) -> _Key:
        return self.model, kind, hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def _lookup(self, keys: list[_Key]) -> list[_Vector | None]:
        """Fetch cached vectors (None for a miss), refreshing their recency and counting hits and misses."""
        with self._lock:
            found: list[_Vector | None] = []
            for key in keys:
                vector = self._entries.get(key)
                if vector is not None:
                    self._entries.move_to_end(key)
                found.append(vector)
            hits = sum(vector is not None for vector in found)
            self._hits += hits
            self._misses += len(keys) - hits
        return found

    def _store(self, computed: dict[_Key, Sequence[float] | _Vector]) -> dict[_Key, _Vector]:
        """Convert freshly computed vectors, insert them, and evict the least recently used beyond the bound."""
        vectors: dict[_Key, _Vector] = {}
        for key, values in computed.items():
            # A copy, not a view: a row of a batch matrix would keep the whole batch alive after the rest is evicted.
            vector = np.array(values, dtype=np.float32)
            vector.flags.writeable = False  # shared between callers: nobody may mutate a cached vector
            vectors[key] = vector
            self._dim = vector.shape[0]
        if self.max_entries:
            with self._lock:
                self._entries.update(vectors)
                for key in vectors:
                    self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return vectors

    def _stack(self, vectors: list[_Vector]) -> npt.NDArray[np.float32]:
        if not vectors:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.stack(vectors)


def _missing(texts: list[str], keys: list[_Key], found: list[_Vector | None]) -> dict[_Key, str]:
    """The distinct missing keys with their texts, in first-occurrence order."""
    return {key: text for text, key, vector in zip(texts, keys, found, strict=True) if vector is None}


def _fill(keys: list[_Key], found: list[_Vector | None], computed: dict[_Key, _Vector]) -> list[_Vector]:
    """Merge cached and freshly computed vectors back into input order."""
    return [vector if vector is not None else computed[key] for key, vector in zip(keys, found, strict=True)]
