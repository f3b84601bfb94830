"""JSQuAD as chunks and questions, loaded once per session by the `jsquad_slice` / `jsquad_full` fixtures."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from reference_orchestrator.corpus import Chunk, Corpus, jsquad_chunks


class Question(NamedTuple):
    """A JSQuAD question and the paragraph (chunk) that answers it."""

    id: str
    text: str
    gold: int
    """Index of the gold chunk in `JsquadSet.chunks`."""


@dataclass(frozen=True)
class JsquadSet:
    """Paragraphs as the reference orchestrator's chunks (document_id = title, page = paragraph index)."""

    chunks: list[Chunk]
    questions: list[Question] = field(repr=False)

    @cached_property
    def corpus(self) -> Corpus:
        """BM25 + hashing-vector search over the chunks, built on first use and shared by the session."""
        return Corpus(self.chunks)


def load_jsquad(path: Path) -> JsquadSet:
    """Every paragraph of a SQuAD-format file with its questions, in file order."""
    chunks: list[Chunk] = []
    questions: list[Question] = []
    for chunk, qas in jsquad_chunks(path):
        questions += [Question(qid, text, len(chunks)) for qid, text in qas]
        chunks.append(chunk)
    return JsquadSet(chunks, questions)
