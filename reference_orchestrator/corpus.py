"""A local chunk corpus with the two searches the Go orchestrator runs: full-text (BM25) and vector.

Full-text search is BM25 over the service's own tokeniser (character bigrams for Japanese, words
for English), close to what a PostgreSQL deployment with a bigram full-text index returns. Vector
search is cosine over the embedded hashing embedder, standing in for pgvector. `postgres.py` is the
same interface (`SearchBackend`) answered by a real PostgreSQL with the SQL the Go side runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from rank_bm25 import BM25Okapi

from graphs.embeddings.hashing import HashingEmbeddings
from graphs.text.tokenize import tokenize


@dataclass(frozen=True)
class Chunk:
    """One searchable chunk: document id, page (paragraph index) and the Markdown text."""

    document_id: str
    page: int
    chunk_id: str
    text: str


class SearchBackend(Protocol):
    """A search side the reference loop can drive: one call per `queries_text` / `queries_vector` entry."""

    def text_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """Top-k chunks for one `queries_text` entry, best first, with positive scores."""
        ...

    def vector_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """Top-k chunks for one `queries_vector` entry, best first."""
        ...


class PositiveIdfBM25(BM25Okapi):  # type: ignore[misc]  # rank_bm25 ships no type hints
    """rank_bm25's BM25Okapi, except that no term's IDF is zero or negative, so a chunk containing a term always scores.

    BM25Okapi's IDF, log((N - n + 0.5) / (n + 0.5)), is negative for a term in more than half of the N chunks
    (zero for exactly half); it raises negative ones to a floor, epsilon × the corpus's average IDF. In a
    corpus of a few chunks most terms are in half of them or more, so that average and the floor are
    negative too, and `Corpus.text_search` (which keeps positive scores only) found nothing: "tokyo tower"
    in three chunks about Tokyo's towers, "333" in two Japanese chunks. Here:

    - where the floor is positive (any corpus of realistic size, JSQuAD's 1,145 chunks among them), every
      IDF is BM25Okapi's, except that a term in exactly half of the chunks gets the floor as well (BM25Okapi
      left it at 0, below the terms in more than half); an odd number of chunks has no such term;
    - where it is not, the corpus's IDFs are Lucene's, log(1 + (N - n + 0.5) / (n + 0.5)): positive for
      every term and still lower the more chunks contain it.
    """

    def _calc_idf(self, nd: Mapping[str, int]) -> None:
        super()._calc_idf(nd)
        floor = self.epsilon * self.average_idf
        if floor > 0:
            for word, idf in self.idf.items():
                if idf <= 0:
                    self.idf[word] = floor
            return
        n = self.corpus_size
        for word, freq in nd.items():
            self.idf[word] = math.log1p((n - freq + 0.5) / (freq + 0.5))


class Corpus:
    """BM25 and cosine search over a fixed list of chunks."""

    def __init__(self, chunks: list[Chunk], *, vector_dim: int = 512) -> None:
        self.chunks = chunks
        self._bm25 = PositiveIdfBM25([tokenize(c.text) or ["∅"] for c in chunks])
        self._embedder = HashingEmbeddings(dim=vector_dim)
        self._matrix: np.ndarray | None = None

    @classmethod
    def from_jsonl(cls, path: Path) -> Corpus:
        """Load `{document_id, page, chunk_id, text}` lines."""
        chunks = []
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    chunks.append(Chunk(row["document_id"], int(row["page"]), row["chunk_id"], row["text"]))
        return cls(chunks)

    def text_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """Top-k chunks by BM25: the chunks containing at least one of the query's tokens (every IDF is positive)."""
        tokens = tokenize(query)
        if not tokens:
            return []
        scores = self._bm25.get_scores(tokens)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.chunks[i], float(scores[i])) for i in top if scores[i] > 0]

    def vector_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """Top-k chunks by cosine similarity of hashing embeddings."""
        if self._matrix is None:
            self._matrix = np.asarray(self._embedder.embed_documents([c.text for c in self.chunks]), dtype=np.float32)
        q = np.asarray(self._embedder.embed_query(query), dtype=np.float32)
        scores = self._matrix @ q
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.chunks[i], float(scores[i])) for i in top if scores[i] > 0]


def jsquad_chunks(path: Path) -> Iterable[tuple[Chunk, list[tuple[str, str]]]]:
    """JSQuAD paragraphs as chunks (document_id = title, page = paragraph index) with their questions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for article in data["data"]:
        title = article["title"]
        for index, paragraph in enumerate(article["paragraphs"]):
            text = paragraph["context"].replace(" [SEP] ", "\n", 1)
            chunk = Chunk(document_id=title, page=index, chunk_id=f"{title}#{index}", text=text)
            yield chunk, [(qa["id"], qa["question"]) for qa in paragraph["qas"]]
