"""The reference orchestrator's local searches behave like the Go side's (BM25 text, cosine vector)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reference_orchestrator.corpus import Chunk, Corpus, jsquad_chunks
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
