"""The reference orchestrator's local searches behave like the Go side's (BM25 text, cosine vector)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rank_bm25 import BM25Okapi

from graphs.text.tokenize import tokenize
from reference_orchestrator.corpus import Chunk, Corpus, PositiveIdfBM25, jsquad_chunks
from reference_orchestrator.loop import execute_search
from tests.support.jsquad import JsquadSet

SLICE = Path(__file__).resolve().parents[1] / "fixtures" / "jsquad_slice.json"


@pytest.fixture(name="corpus")
def fixture_corpus(jsquad_slice: JsquadSet) -> Corpus:
    return jsquad_slice.corpus


def test_jsquad_chunks_use_title_and_paragraph_index() -> None:
    chunk, qas = next(iter(jsquad_chunks(SLICE)))
    assert chunk.document_id == "梅雨"
    assert chunk.page == 0
    assert "[SEP]" not in chunk.text
    assert qas


@pytest.mark.parametrize("search", ["text_search", "vector_search"])
def test_searches_rank_the_paragraph_a_question_came_from(jsquad_slice: JsquadSet, search: str) -> None:
    corpus = jsquad_slice.corpus
    hits = 0
    questions = [(jsquad_slice.chunks[q.gold], q.text) for q in jsquad_slice.questions[::7]]
    for chunk, question in questions:
        ranked = getattr(corpus, search)(question, 5)
        hits += any(c.chunk_id == chunk.chunk_id for c, _ in ranked)
    assert hits / len(questions) >= 0.8


def test_execute_search_tags_hits_with_their_query(corpus: Corpus) -> None:
    round_ = execute_search(corpus, {"queries_text": ["梅雨 期間"], "queries_vector": ["梅雨の時期"]}, k=3, vector=True)
    assert round_["queries_text"] == ["梅雨 期間"]
    assert {h["retrieval"] for h in round_["results"]} == {"text", "vector"}
    assert all(h["metadata"]["query"] in {"梅雨 期間", "梅雨の時期"} for h in round_["results"])


def test_jsonl_corpus(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    rows: list[dict[str, Any]] = [
        {"document_id": "d", "page": 1, "chunk_id": "d#1", "text": "光合成は植物が光から糖を作る反応。"},
        {"document_id": "e", "page": 2, "chunk_id": "e#2", "text": "呼吸は糖を分解してエネルギーを得る。"},
        {"document_id": "f", "page": 3, "chunk_id": "f#3", "text": "蒸散は葉から水が出ていく現象。"},
    ]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    corpus = Corpus.from_jsonl(path)
    assert corpus.chunks[0] == Chunk("d", 1, "d#1", rows[0]["text"])
    assert corpus.text_search("光合成", 5)[0][0].chunk_id == "d#1"
    assert corpus.text_search("", 5) == []


TOKYO = ["Tokyo Tower is 333 metres tall.", "Tokyo Tower opened in 1958.", "Tokyo Skytree is 634 metres tall."]
TOKYO_JA = ["東京タワーの高さは333メートルです。", "東京スカイツリーの高さは634メートルです。"]
HALF = ["alpha beta gamma", "alpha delta epsilon", "zeta eta theta", "iota kappa lambda"]


def _small(texts: list[str]) -> Corpus:
    return Corpus([Chunk("d", i, f"c{i}", text) for i, text in enumerate(texts)])


@pytest.mark.parametrize(
    ("texts", "query", "expected"),
    [
        (TOKYO, "tokyo tower", ["c1", "c0", "c2"]),  # both terms first (the shorter chunk ahead), then tokyo alone
        (TOKYO, "tokyo", ["c1", "c0", "c2"]),  # a term in every chunk still finds them all
        (TOKYO, "333", ["c0"]),
        (TOKYO, "skytree tall", ["c2", "c0"]),
        (TOKYO_JA, "333", ["c0"]),  # two chunks: a term in one of them had IDF 0
        (TOKYO_JA, "東京タワー", ["c0", "c1"]),
        (TOKYO_JA[:1], "東京タワー", ["c0"]),  # one chunk: every IDF was negative
        (HALF, "alpha", ["c0", "c1"]),  # the floor is positive; a term in exactly half had IDF 0
        (HALF, "omega", []),
    ],
)
def test_a_small_corpus_finds_every_chunk_containing_a_query_term(
    texts: list[str], query: str, expected: list[str]
) -> None:
    """rank_bm25 gives a term in half the chunks or more an IDF <= 0, and a few chunks a negative floor."""
    assert [chunk.chunk_id for chunk, _ in _small(texts).text_search(query, 10)] == expected


@pytest.mark.parametrize("texts", [TOKYO, TOKYO_JA, TOKYO_JA[:1], HALF])
def test_every_idf_is_positive_and_falls_as_more_chunks_contain_the_term(texts: list[str]) -> None:
    tokenized = [tokenize(text) for text in texts]
    bm25 = PositiveIdfBM25(tokenized)
    frequency = {word: sum(word in doc for doc in tokenized) for word in bm25.idf}
    assert all(idf > 0 for idf in bm25.idf.values()), bm25.idf
    by_frequency = sorted(bm25.idf, key=lambda word: frequency[word])
    idfs = [bm25.idf[word] for word in by_frequency]
    assert idfs == sorted(idfs, reverse=True)


def test_a_corpus_whose_floor_is_positive_keeps_rank_bm25s_idf(jsquad_slice: JsquadSet) -> None:
    """JSQuAD (the benchmarks' corpus, an odd number of chunks) ranks exactly as rank_bm25 ranks it."""
    tokenized = [tokenize(chunk.text) or ["∅"] for chunk in jsquad_slice.chunks]
    ours, theirs = PositiveIdfBM25(tokenized), BM25Okapi(tokenized)
    assert theirs.epsilon * theirs.average_idf > 0
    assert ours.idf == theirs.idf
