"""The terms the Librarian writes, run as the Go side runs them: PostgreSQL must be able to run them and find with them.

PostgreSQL folds a chunk with `lower(normalize(text, NFKC))`: a term the service folded another way (ß → ss,
a final ς → σ) finds nothing there, and a term holding NUL cannot even be sent. The judge is a real server.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from reference_orchestrator import pg_server
from reference_orchestrator.corpus import Chunk
from reference_orchestrator.postgres import PostgresCorpus

pytestmark = pytest.mark.postgres

_names = itertools.count()

CHUNKS = {
    "strasse": "Die Hauptstraße ist 5 km lang.",
    "rhythm": "リズムは古代ギリシャの ῥυθμός に由来する。",
    "sigma": "ΟΔΟΣ は道を意味する。",
    "istanbul": "İstanbul はトルコ最大の都市である。",
    "tsuyu": "梅雨がみられるのは5月から7月の期間である。",
    "tower": "東京タワーの高さは333メートルである。",
}


@pytest.fixture(name="terms_corpus", scope="module")
def fixture_terms_corpus(debian_postgres: pg_server.PostgresServer) -> Iterator[PostgresCorpus]:
    name = f"terms{next(_names)}"
    with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    chunks = [Chunk(cid, 0, cid, text) for cid, text in CHUNKS.items()]
    with PostgresCorpus.create(debian_postgres.conninfo_for(name), chunks) as corpus:
        yield corpus
    with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.mark.parametrize(
    ("question", "chunk_id"),
    [
        ("Hauptstraßeの長さは何kmか", "strasse"),
        ("ῥυθμόςに由来するものは何か", "rhythm"),
        ("ΟΔΟΣの意味は何か", "sigma"),
        ("İstanbulはどこの都市か", "istanbul"),
        ("梅雨\x00がみられるのはどの期間？", "tsuyu"),
        ("東京\u200bタワー\ufeffの高さは何メートルか", "tower"),
        ("東京\x07タワーの高さは何メートルか", "tower"),
    ],
)
def test_every_term_the_librarian_writes_runs_on_postgresql_and_finds_its_chunk(
    terms_corpus: PostgresCorpus, app: Litestar, question: str, chunk_id: str
) -> None:
    with TestClient(app) as client:
        first_call = {"request_id": "t", "subject_id": "s", "user_query": question}
        response = client.post("/agent/librarian/think", json=first_call)
    body = response.json()
    assert response.status_code == 200, body
    assert body["action"] == "SEARCH", body
    found: set[str] = set()
    for entry in body["queries_text"]:
        assert entry.isprintable(), entry  # no control or format character reaches the search side
        found.update(chunk.chunk_id for chunk, _ in terms_corpus.text_search(entry, 10))
    assert chunk_id in found, body["queries_text"]
