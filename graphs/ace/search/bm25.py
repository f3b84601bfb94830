"""Okapi BM25 with an inverted index, scoring any subset of the corpus without rebuilding it.

The seed builds `rank_bm25.BM25Okapi` over the filtered candidates on every query. This index is built
once per playbook (and cached with it) and gives the *same* scores as `BM25Okapi` built over just the
candidates (`mask`): document frequencies, average length and the epsilon floor for negative IDF are
taken over the masked documents. Scoring touches only the postings of the query's tokens.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

K1 = 1.5
B = 0.75
EPSILON = 0.25
"""rank_bm25's defaults, so the scores match the seed's `BM25Okapi()`."""
BUILD_CHUNK = 1_000
"""Documents indexed between two calls of the build's `check`."""

Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]


class Bm25Index:
    """Postings grouped by term: `docs[starts[t]:starts[t+1]]` hold term t, with its frequencies in `tfs`.

    Built in one pass over the documents into typed arrays (4 bytes a posting while building, no Python int
    per posting, no token lists kept), so a 20,000-bullet playbook costs megabytes, not hundreds of them.
    """

    def __init__(self, corpus: Iterable[Sequence[str]], check: Callable[[], None] | None = None) -> None:
        """Index tokenised documents (one token list per document, duplicates meaning frequency).

        Args:
            corpus: The documents' tokens; an iterator is read once, so each list can be dropped after use.
            check: Called every `BUILD_CHUNK` documents (a request's `check_deadline`, which raises once its
                budget is spent), so a build on a worker thread stops with the request.
        """
        vocabulary: dict[str, int] = {}
        term_ids, doc_ids, frequencies, lengths = array("i"), array("i"), array("i"), array("i")
        for doc, tokens in enumerate(corpus):
            if check is not None and doc % BUILD_CHUNK == BUILD_CHUNK - 1:
                check()
            lengths.append(len(tokens))
            for token, tf in Counter(tokens).items():
                term_ids.append(vocabulary.setdefault(token, len(vocabulary)))
                doc_ids.append(doc)
                frequencies.append(tf)
        terms = np.frombuffer(term_ids, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        self.vocabulary = vocabulary
        self.size = len(lengths)
        self.doc_len = np.frombuffer(lengths, dtype=np.int32).astype(np.float64)
        self.posting_terms = terms[order]
        self.posting_docs = np.frombuffer(doc_ids, dtype=np.int32)[order]
        self.posting_tfs = np.frombuffer(frequencies, dtype=np.int32)[order].astype(np.float64)
        self.starts = np.searchsorted(self.posting_terms, np.arange(len(vocabulary) + 1))
        self._df_all = np.diff(self.starts).astype(np.float64)
        self._grouped: dict[Callable[[str], str], dict[str, int]] = {}

    def document_frequency(self, token: str) -> int:
        """How many indexed documents hold `token` (0 for a token the index has never seen)."""
        term = self.vocabulary.get(token)
        return 0 if term is None else int(self._df_all[term])

    def frequencies_by(self, key: Callable[[str], str]) -> dict[str, int]:
        """Document frequency per `key(token)` (e.g. a stem): the largest of its tokens', computed once per key."""
        cached = self._grouped.get(key)
        if cached is None:
            cached = {}
            for token, term in self.vocabulary.items():
                group = key(token)
                cached[group] = max(cached.get(group, 0), int(self._df_all[term]))
            self._grouped[key] = cached
        return cached

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (the vocabulary dict is extra)."""
        arrays = (self.doc_len, self.posting_terms, self.posting_docs, self.posting_tfs, self.starts, self._df_all)
        return sum(a.nbytes for a in arrays)

    def scores(self, query: Sequence[str], mask: Mask | None = None) -> Scores:
        """BM25 scores of every document (0 outside `mask`), as `BM25Okapi(masked corpus).get_scores(query)`.

        Args:
            query: Query tokens; a repeated token counts once per occurrence, as in rank_bm25.
            mask: Which documents form the corpus; None for all of them.

        Returns:
            One score per indexed document.
        """
        scores = np.zeros(self.size, dtype=np.float64)
        if self.size == 0:
            return scores
        in_corpus = np.ones(self.size, dtype=np.bool_) if mask is None else mask
        corpus_size = int(in_corpus.sum())
        if corpus_size == 0:
            return scores
        avgdl = float(self.doc_len[in_corpus].sum()) / corpus_size
        if avgdl == 0.0:
            return scores  # every candidate is empty: nothing can match
        if mask is None:
            df = self._df_all
        else:
            df = np.bincount(self.posting_terms[mask[self.posting_docs]], minlength=len(self.vocabulary)).astype(
                np.float64
            )
        idf = self._idf(df, corpus_size)
        norm = K1 * (1.0 - B + B * self.doc_len / avgdl)
        for token, count in Counter(query).items():
            term = self.vocabulary.get(token)
            if term is None or df[term] == 0:
                continue
            start, end = self.starts[term], self.starts[term + 1]
            docs = self.posting_docs[start:end]
            tfs = self.posting_tfs[start:end]
            if mask is not None:
                keep = mask[docs]
                docs, tfs = docs[keep], tfs[keep]
            contribution = idf[term] * (tfs * (K1 + 1.0) / (tfs + norm[docs]))
            for _ in range(count):  # repeated query tokens add up one by one, in rank_bm25's order
                scores[docs] += contribution
        return scores

    @staticmethod
    def _idf(df: npt.NDArray[np.float64], corpus_size: int) -> npt.NDArray[np.float64]:
        """rank_bm25's BM25Okapi IDF: log((N − n + 0.5) / (n + 0.5)), negatives floored at ε × mean IDF."""
        present = df > 0
        idf = np.zeros_like(df)
        idf[present] = np.log(corpus_size - df[present] + 0.5) - np.log(df[present] + 0.5)
        count = int(present.sum())
        if count:
            average = math.fsum(idf[present].tolist()) / count
            idf[present & (idf < 0)] = EPSILON * average
        return idf
