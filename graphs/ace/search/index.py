"""The per-playbook search index (bullet vectors + BM25 postings), cached by the content of the bullets.

The playbook arrives with every ACE request, so without a cache every query would tokenise and embed the
whole playbook again (the seed's design). Here the index of a playbook is built once: its vectors come
through the context's `CachedEmbeddings` (so a playbook that changed by one bullet embeds one bullet), and
the finished index is kept in a small LRU keyed by (embedder, a fingerprint of the bullets' search texts)
and confirmed by comparing the texts, so a repeated playbook costs a comparison, not a rebuild. Like every
cache in the service it is an optimisation only: a miss rebuilds the same index, so any replica can serve
any request.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from contracts.ace import Bullet
from graphs.ace.search.bm25 import Bm25Index
from graphs.context import UNBOUNDED, Budget
from graphs.embeddings.cache import CachedEmbeddings
from graphs.text.tokenize import tokenize

MAX_CACHED_ROWS = 20_000
"""Bullets held across all cached indexes (about 2 KB of vector each at 512 dimensions)."""
MAX_CACHED_INDEXES = 32
INLINE_BUILD_LIMIT = 1_000
"""Above this many bullets the index is built on a worker thread so the event loop keeps serving."""
EMBED_CHUNK = 2_000
"""Texts embedded per call by `embed_chunked` (index builds, the curator's merge): a checkpoint between calls."""


def search_text(bullet: Bullet) -> str:
    """The text a bullet is found by: its `searchable_text` (or its content when that is blank) and keywords."""
    text = bullet.searchable_text.strip() or bullet.content
    return f"{text} {' '.join(bullet.keywords)}" if bullet.keywords else text


@dataclass(frozen=True, eq=False)
class PlaybookIndex:
    """Everything search needs about one list of bullet texts."""

    texts: tuple[str, ...]
    vectors: npt.NDArray[np.float32]
    norms: npt.NDArray[np.float32]
    bm25: Bm25Index

    @property
    def size(self) -> int:
        """Number of indexed bullets."""
        return int(self.vectors.shape[0])


def texts_fingerprint(texts: Sequence[str]) -> bytes:
    """A cheap key for an ordered list of texts: their count and lengths, and the ends of the first and last.

    Hashing all the text costs more than the rest of a warm search on 10,000 bullets (UTF-8 encoding of
    megabytes), so the key only narrows the lookup and a hit is confirmed by comparing the texts themselves
    (`PlaybookIndex.texts`), which is a memcmp per text. Two lists with the same fingerprint can never share
    an index; at worst they evict each other.
    """
    digest = hashlib.sha256(array("q", [len(texts), *map(len, texts)]).tobytes())
    if texts:
        ends = f"{texts[0][:64]}\x00{texts[0][-64:]}\x00{texts[-1][:64]}\x00{texts[-1][-64:]}"
        digest.update(ends.encode("utf-8", "surrogatepass"))
    return digest.digest()


def embedder_key(embeddings: Embeddings) -> str:
    """What distinguishes one embedder's vectors from another's in the cache key."""
    if isinstance(embeddings, CachedEmbeddings):
        return embeddings.model
    return f"{type(embeddings).__qualname__}@{id(embeddings)}"


class IndexCache:
    """A thread-safe LRU of built indexes, bounded by total rows and by count."""

    def __init__(self, max_rows: int = MAX_CACHED_ROWS, max_indexes: int = MAX_CACHED_INDEXES) -> None:
        """Create an empty cache; `max_rows=0` disables it."""
        self.max_rows = max_rows
        self.max_indexes = max_indexes
        self._entries: OrderedDict[tuple[str, bytes], PlaybookIndex] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[str, bytes], texts: Sequence[str]) -> PlaybookIndex | None:
        """The cached index of exactly `texts` under `key`, refreshed as most recently used."""
        with self._lock:
            index = self._entries.get(key)
            if index is None or index.texts != tuple(texts):
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return index

    def put(self, key: tuple[str, bytes], index: PlaybookIndex) -> None:
        """Insert an index, evicting the least recently used beyond the bounds (too big: not cached)."""
        if index.size > self.max_rows:
            return
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._rows -= previous.size
            self._entries[key] = index
            self._rows += index.size
            while self._entries and (self._rows > self.max_rows or len(self._entries) > self.max_indexes):
                _, evicted = self._entries.popitem(last=False)
                self._rows -= evicted.size

    def clear(self) -> None:
        """Forget every index and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._rows = 0
            self.hits = 0
            self.misses = 0


INDEX_CACHE = IndexCache()
"""The process-wide cache (shared by every request, like the embedding cache)."""


def _assemble(
    vectors: npt.NDArray[np.float32], texts: Sequence[str], check: Callable[[], None] | None = None
) -> PlaybookIndex:
    matrix = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
    matrix.flags.writeable = False
    norms = np.linalg.norm(matrix, axis=1).astype(np.float32) if len(texts) else np.zeros(0, dtype=np.float32)
    bm25 = Bm25Index((tokenize(t) for t in texts), check)  # one document's tokens alive at a time
    return PlaybookIndex(texts=tuple(texts), vectors=matrix, norms=norms, bm25=bm25)


def cosines(
    rows: npt.NDArray[np.float32], query: npt.NDArray[np.float32], row_norms: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float64]:
    """The cosine of `query` with each row, in float64 (0 against a zero vector); search and merge both use it.

    `row_norms` are the rows' own float32 norms when the caller keeps them (the index does). einsum, not
    BLAS: a threaded gemv wakes sleeping threads (milliseconds of jitter on a small matrix), and its
    summation order depends on the thread count, so scores could differ between replicas; einsum's
    per-row sums do not depend on the other rows, so a subset of rows scores exactly as the whole.
    """
    norms = np.linalg.norm(rows, axis=1) if row_norms is None else row_norms
    denominators = norms.astype(np.float64) * float(np.linalg.norm(query))
    denominators[denominators == 0] = 1.0
    result: npt.NDArray[np.float64] = np.einsum("ij,j->i", rows, query).astype(np.float64) / denominators
    return result


def _embed_sync(embeddings: Embeddings, texts: list[str]) -> npt.NDArray[np.float32]:
    if isinstance(embeddings, CachedEmbeddings):
        return embeddings.embed_matrix(texts)
    return np.asarray(embeddings.embed_documents(texts), dtype=np.float32)


async def embed_texts(embeddings: Embeddings, texts: list[str]) -> npt.NDArray[np.float32]:
    """Embed documents into a float32 matrix, through the content-hash cache when the embedder has one."""
    if isinstance(embeddings, CachedEmbeddings):
        return await embeddings.aembed_matrix(texts)
    return np.asarray(await embeddings.aembed_documents(texts), dtype=np.float32)


def build_index(embeddings: Embeddings, texts: list[str], cache: IndexCache = INDEX_CACHE) -> PlaybookIndex:
    """The index of `texts`, from the cache or built now (synchronous embedders only)."""
    key = (embedder_key(embeddings), texts_fingerprint(texts))
    index = cache.get(key, texts)
    if index is None:
        index = _assemble(_embed_sync(embeddings, texts), texts)
        cache.put(key, index)
    return index


async def abuild_index(
    embeddings: Embeddings, texts: list[str], cache: IndexCache = INDEX_CACHE, budget: Budget = UNBOUNDED
) -> PlaybookIndex:
    """Async `build_index`, bounded: embedded in chunks into one float32 matrix, big playbooks tokenised off the loop.

    Between chunks the build checks the budget, on the loop (`checkpoint`) and on the worker thread
    (`check_deadline`), so when the request's deadline passes the build itself stops instead of running on
    for a response nobody will get.
    """
    key = (embedder_key(embeddings), texts_fingerprint(texts))
    index = cache.get(key, texts)
    if index is None:
        vectors = await embed_chunked(embeddings, texts, budget)
        if len(texts) > INLINE_BUILD_LIMIT:
            index = await asyncio.to_thread(_assemble, vectors, texts, budget.check_deadline)
        else:
            index = _assemble(vectors, texts, budget.check_deadline)
        cache.put(key, index)
    return index


async def embed_chunked(embeddings: Embeddings, texts: list[str], budget: Budget) -> npt.NDArray[np.float32]:
    """The texts' vectors, `EMBED_CHUNK` at a time, in one preallocated float32 matrix (no second copy).

    The budget's checkpoint comes between calls, so a playbook of 20,000 bullets (search's index, the
    merge's section) yields to the event loop while it is embedded and stops at the request's deadline.
    """
    first = await embed_texts(embeddings, texts[:EMBED_CHUNK])
    if len(texts) <= EMBED_CHUNK:
        return first
    matrix = np.empty((len(texts), first.shape[1]), dtype=np.float32)
    matrix[: len(first)] = first
    for start in range(EMBED_CHUNK, len(texts), EMBED_CHUNK):
        await budget.checkpoint()
        chunk = texts[start : start + EMBED_CHUNK]
        matrix[start : start + len(chunk)] = await embed_texts(embeddings, chunk)
    return matrix
