"""The PostgreSQL search side: the chunk table, and the exact SQL the Go orchestrator runs for a SEARCH.

The SQL lives in `sql/` and is executed here verbatim — `schema.sql` (+ `schema_vector.sql` where pgvector
is installed) to create the table, `search_text.sql` for each `queries_text` entry and `search_vector.sql`
for each `queries_vector` entry — so what the tests and `bench.librarian_quality --backend postgres`
measure is what the README hands to the Go team. The two search statements take `$1`/`$2` parameters
exactly as Go's `database/sql` sends them, which psycopg's `RawCursor` passes through unchanged.

Vectors come from the service's embedded hashing embedder (512 dimensions), for chunks and queries alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from graphs.embeddings.hashing import HashingEmbeddings
from reference_orchestrator.corpus import Chunk

SQL_DIR = Path(__file__).resolve().parent / "sql"
VECTOR_DIM = 512
CONNECT_TIMEOUT_S = 10
"""libpq's `connect_timeout` when neither the connection string nor PGCONNECT_TIMEOUT sets one (libpq: no limit)."""

T = TypeVar("T")


class NoChunksTable(LookupError):
    """The database has no `chunks` table on its search_path: nothing to search."""


@cache
def sql(name: str) -> str:
    """The text of `sql/<name>.sql`, as shipped (the README points the Go team at these files)."""
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


def _vector_literal(values: Iterable[float]) -> str:
    """The vector in pgvector's text form, which a Go client can send as a plain string parameter too."""
    return "[" + ",".join(f"{v:.7g}" for v in values) + "]"


def connect(conninfo: str) -> psycopg.Connection[TupleRow]:
    """An autocommit connection (every search is one read-only statement) that gives up on a server that never answers.

    Without `connect_timeout` libpq waits for a hung server (or a firewall dropping packets) for ever, and the
    loop with it; a timeout the caller chose (in the string, or PGCONNECT_TIMEOUT) is kept.
    """
    chosen = "connect_timeout" in conninfo_to_dict(conninfo) or os.environ.get("PGCONNECT_TIMEOUT")
    if chosen:
        return psycopg.connect(conninfo, autocommit=True)
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)


def pgvector_available(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Whether this server can `CREATE EXTENSION vector`."""
    row = conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    return bool(row and row[0])


def create_schema(conn: psycopg.Connection[tuple[object, ...]], *, vector: bool) -> None:
    """Run schema.sql (and schema_vector.sql when `vector`) verbatim."""
    conn.execute(sql("schema"))  # a file of statements: one simple query
    if vector:
        conn.execute(sql("schema_vector"))


def load_chunks(conn: psycopg.Connection[tuple[object, ...]], chunks: Iterable[Chunk], *, vector: bool) -> int:
    """Insert chunks (COPY), with their embeddings when `vector`; returns how many were loaded.

    Chunks whose embedding is the zero vector (no text features) get NULL: cosine distance to it is undefined.
    """
    embedder = HashingEmbeddings(dim=VECTOR_DIM)
    rows = list(chunks)
    columns = "document_id, page, chunk_id, text" + (", embedding" if vector else "")
    with conn.cursor() as cur, cur.copy(f"COPY chunks ({columns}) FROM STDIN") as copy:
        for start in range(0, len(rows), 256):
            batch = rows[start : start + 256]
            vectors = embedder.embed_documents([c.text for c in batch]) if vector else [None] * len(batch)
            for chunk, values in zip(batch, vectors, strict=True):
                row: tuple[object, ...] = (chunk.document_id, chunk.page, chunk.chunk_id, chunk.text)
                if vector:
                    row += (_vector_literal(values) if values and any(values) else None,)
                copy.write_row(row)
    conn.execute("ANALYZE chunks")
    return len(rows)


class PostgresCorpus:
    """Answers the reference orchestrator's searches from a PostgreSQL `chunks` table with the shipped SQL.

    Same interface as `Corpus` (`text_search`, `vector_search`), so `loop.run_question` runs unchanged.
    Vector search needs the table's `embedding` column (pgvector); without it `vector_search` raises.
    A connection that breaks (the server restarted, an administrator ended the session) is opened again
    once per statement.
    """

    def __init__(self, conninfo: str) -> None:
        """Connect and prepare the two searches."""
        self._conninfo = conninfo
        self._conn = connect(conninfo)
        self._cursor = psycopg.RawCursor(self._conn)
        self._embedder = HashingEmbeddings(dim=VECTOR_DIM)
        self.vector = self._has_embedding()

    def _has_embedding(self) -> bool:
        """Whether the `chunks` table the searches read has an `embedding` column.

        `to_regclass('chunks')` resolves the name through the search_path, as the SQL files' `FROM chunks` does:
        a `chunks` table with an embedding in another schema (say archive.chunks) is not the one searched.

        Raises:
            NoChunksTable: no such table on the search_path.
        """
        row = self._conn.execute(
            "SELECT to_regclass('chunks')::text, EXISTS (SELECT FROM pg_attribute"
            " WHERE attrelid = to_regclass('chunks') AND attname = 'embedding' AND NOT attisdropped)"
        ).fetchone()
        if row is None or row[0] is None:
            self.close()
            raise NoChunksTable(
                "no table chunks on the search_path of this database: create it with reference_orchestrator/sql/"
                'schema.sql and load the chunks (README, "The search side")'
            )
        return bool(row[1])

    @classmethod
    def create(cls, conninfo: str, chunks: Iterable[Chunk], *, vector: bool | None = None) -> PostgresCorpus:
        """Create the schema in an empty database, load `chunks` and connect.

        Args:
            conninfo: libpq connection string.
            chunks: what to load.
            vector: load embeddings too; None = whenever the server has pgvector.
        """
        with connect(conninfo) as conn:
            use_vector = pgvector_available(conn) if vector is None else vector
            create_schema(conn, vector=use_vector)
            load_chunks(conn, chunks, vector=use_vector)
        return cls(conninfo)

    def __enter__(self) -> PostgresCorpus:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._cursor.close()
        self._conn.close()

    def _run(self, statement: Callable[[psycopg.RawCursor[TupleRow]], T]) -> T:
        """`statement` on the cursor; on a connection found broken, once more on a new one.

        A statement that fails on a live connection (bad SQL, a missing table) is not repeated.
        """
        try:
            return statement(self._cursor)
        except psycopg.OperationalError:
            if not self._conn.broken:
                raise
        self.close()
        self._conn = connect(self._conninfo)
        self._cursor = psycopg.RawCursor(self._conn)
        return statement(self._cursor)

    @property
    def size(self) -> int:
        """How many chunks the table holds."""
        row = self._run(lambda cur: cur.execute("SELECT count(*) FROM chunks").fetchone())
        return int(row[0]) if row else 0

    def _rows(self, statement: str, parameter: str, k: int) -> list[tuple[Chunk, float]]:
        # prepare=True: a server-side prepared statement per SQL file, as a Go service would keep one.
        rows = self._run(lambda cur: cur.execute(sql(statement), (parameter, k), prepare=True).fetchall())
        return [
            (Chunk(str(document_id), int(page), str(chunk_id), str(text)), float(score))
            for document_id, page, chunk_id, text, score in rows
        ]

    def text_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """search_text.sql for one `queries_text` entry."""
        return self._rows("search_text", query, k) if query.strip() else []

    def vector_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """search_vector.sql for one `queries_vector` entry, embedded with the hashing embedder."""
        if not self.vector:
            raise RuntimeError("the chunks table has no embedding column (pgvector was not available at load time)")
        values = self._embedder.embed_query(query)
        if not any(values):
            return []
        return self._rows("search_vector", _vector_literal(values), k)
