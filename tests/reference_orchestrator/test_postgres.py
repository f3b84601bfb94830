"""The PostgreSQL search side: schema, loading, and the exact SQL the Go side runs, against real servers."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from graphs.librarian.question import profile_question
from reference_orchestrator import pg_server, postgres
from reference_orchestrator.corpus import Chunk
from reference_orchestrator.loop import run_question
from reference_orchestrator.postgres import NoChunksTable, PostgresCorpus, create_schema, sql
from tests.support.jsquad import JsquadSet
from tests.support.live_service import LiveService

pytestmark = pytest.mark.postgres  # every test here runs SQL on a server, some through `request.getfixturevalue`

_names = itertools.count()


@pytest.fixture(name="fresh_database")
def fixture_fresh_database(debian_postgres: pg_server.PostgresServer) -> Iterator[str]:
    """An empty database on Debian's server for one test; its connection string."""
    name = f"t{next(_names)}"
    with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield debian_postgres.conninfo_for(name)
    with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _tiny(conninfo: str, texts: dict[str, str]) -> PostgresCorpus:
    return PostgresCorpus.create(conninfo, [Chunk(cid, 0, cid, text) for cid, text in texts.items()])


def _ids(corpus: PostgresCorpus, entry: str) -> list[str]:
    return [chunk.chunk_id for chunk, _ in corpus.text_search(entry, 10)]


def test_debian_postgresql_is_installed() -> None:
    """The suite runs the Go side's SQL on Debian's server; without it this fails (it never skips)."""
    bindir = pg_server.debian_bindir()
    assert bindir is not None, "install Debian's postgresql package (apt-get install postgresql; .ci/run does)"
    assert pg_server.has_extension(bindir, "pg_trgm")
    assert pg_server.find_bindir() == bindir


def test_japanese_has_trigrams_only_under_a_utf8_ctype(debian_postgres: pg_server.PostgresServer) -> None:
    with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        row = conn.execute("SELECT cardinality(show_trgm('東京タワー')), cardinality(show_trgm('東京'))").fetchone()
        assert row == (6, 3)  # "  東", " 東京", "東京タ", "京タワ", "タワー", "ワー " — and "  東", " 東京", "東京 "
        conn.execute("CREATE DATABASE ctype_c TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
    try:
        with psycopg.connect(debian_postgres.conninfo_for("ctype_c"), autocommit=True) as conn:
            with pytest.raises(psycopg.errors.RaiseException, match="UTF-8 LC_CTYPE"):
                create_schema(conn, vector=False)
            conn.execute("CREATE EXTENSION pg_trgm")  # the failed schema script rolled back as a whole
            assert conn.execute("SELECT cardinality(show_trgm('東京タワー'))").fetchone() == (0,)
    finally:
        with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
            conn.execute("DROP DATABASE ctype_c WITH (FORCE)")


def test_loading_the_corpus(debian_corpus: PostgresCorpus, slice_chunks: list[Chunk]) -> None:
    assert debian_corpus.size == len(slice_chunks) == 71
    assert not debian_corpus.vector
    with pytest.raises(RuntimeError, match="pgvector"):
        debian_corpus.vector_search("梅雨", 3)


def test_loading_with_embeddings(pgvector_corpus: PostgresCorpus, pgvector_postgres: pg_server.PostgresServer) -> None:
    assert pgvector_corpus.vector
    with psycopg.connect(pgvector_postgres.conninfo) as conn:
        row = conn.execute("SELECT count(*), count(embedding), max(vector_dims(embedding)) FROM chunks").fetchone()
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")}
    assert row == (71, 71, 512)
    assert {"chunks_search_text_trgm", "chunks_embedding_hnsw"} <= indexes


def test_search_text_is_normalised_like_the_service(fresh_database: str) -> None:
    with _tiny(fresh_database, {"a": "ＧＡＤＶ仮説は池原健二が提唱した", "b": "ｶﾀｶﾅのﾃｷｽﾄ"}) as corpus:
        assert _ids(corpus, "gadv仮説") == ["a"]
        assert _ids(corpus, "カタカナ") == ["b"]


def test_an_entry_is_terms_or_ed_and_ranked_by_how_many_match(fresh_database: str) -> None:
    texts = {
        "all": "梅雨は北海道を除く日本の各地でみられる雨季である。",
        "two": "北海道では梅雨がはっきりしない。",
        "one": "北海道には梅がない。",
        "none": "台風は夏から秋にかけて来る。",
    }
    with _tiny(fresh_database, texts) as corpus:
        assert _ids(corpus, "梅雨 北海道 雨季") == ["all", "two", "one"]
        scores = [score for _, score in corpus.text_search("梅雨 北海道 雨季", 10)]
        assert scores == sorted(scores, reverse=True)
        assert 3 <= scores[0] < 4  # three terms matched, plus a similarity tie-break below 1


def test_short_terms_rank_but_do_not_select_when_a_longer_term_is_there(fresh_database: str) -> None:
    texts = {"tower": "東京タワーの高さは333メートル。", "tokyo": "東京は日本の首都。", "osaka": "大阪の高さ制限。"}
    with _tiny(fresh_database, texts) as corpus:
        # タワー (3 characters) selects; 東京 and 高 only rank, so 東京-only and 高-only chunks are not hits
        assert _ids(corpus, "東京 タワー 高") == ["tower"]
        # with no term of 3+ characters every term selects (no index help, still correct)
        assert _ids(corpus, "東京 高")[:1] == ["tower"]
        assert set(_ids(corpus, "東京 高")) == {"tower", "tokyo", "osaka"}


def test_like_wildcards_in_terms_are_literal(fresh_database: str) -> None:
    with _tiny(fresh_database, {"pct": "税率は10%である", "num": "税率は105である", "us": "a_b と a-b"}) as corpus:
        assert _ids(corpus, "10%") == ["pct"]
        assert _ids(corpus, "a_b") == ["us"]
        assert _ids(corpus, "  ") == []


def test_the_text_query_can_use_the_trigram_index(
    debian_corpus: PostgresCorpus, debian_postgres: pg_server.PostgresServer
) -> None:
    """With sequential scans priced out, the plan must be the GIN index: the WHERE clause is indexable."""
    with psycopg.connect(debian_postgres.conninfo, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = psycopg.RawCursor(conn).execute("EXPLAIN " + sql("search_text"), ("梅雨 期間 北海道", 5)).fetchall()
    assert "Bitmap Index Scan on chunks_search_text_trgm" in "\n".join(row[0] for row in plan)


def _slice_questions(jsquad: JsquadSet, step: int) -> list[tuple[Chunk, str]]:
    return [(jsquad.chunks[q.gold], q.text) for q in jsquad.questions[::step]]


@pytest.mark.parametrize("corpus_fixture", ["debian_corpus", "pgvector_corpus"])
def test_the_exact_sql_finds_the_gold_chunk_for_japanese_questions(
    corpus_fixture: str, request: pytest.FixtureRequest, jsquad_slice: JsquadSet
) -> None:
    """The entry the Librarian writes first (the question's key terms) puts the gold paragraph in the top 5."""
    corpus: PostgresCorpus = request.getfixturevalue(corpus_fixture)
    questions = _slice_questions(jsquad_slice, 5)
    hits = 0
    for chunk, question in questions:
        entry = " ".join(profile_question(question).key_terms)
        hits += chunk.chunk_id in {c.chunk_id for c, _ in corpus.text_search(entry, 5)}
    assert hits / len(questions) >= 0.85, f"{hits}/{len(questions)}"


def test_pgvector_ranks_like_the_in_process_cosine(pgvector_corpus: PostgresCorpus, jsquad_slice: JsquadSet) -> None:
    """search_vector.sql over the stored embeddings agrees with numpy cosine over the same embedder."""
    local = jsquad_slice.corpus
    questions = _slice_questions(jsquad_slice, 9)
    agree = 0
    for _, question in questions:
        remote = pgvector_corpus.vector_search(question, 3)
        expected = local.vector_search(question, 3)
        assert remote, question
        agree += remote[0][0].chunk_id == expected[0][0].chunk_id
        assert remote[0][1] == pytest.approx(expected[0][1], abs=1e-4)
    assert agree >= len(questions) - 1  # HNSW is approximate


@pytest.mark.live
@pytest.mark.parametrize(("corpus_fixture", "vector"), [("debian_corpus", False), ("pgvector_corpus", True)])
async def test_a_librarian_loop_against_postgresql_completes_with_the_gold_document(
    corpus_fixture: str,
    vector: bool,
    live_service: LiveService,
    request: pytest.FixtureRequest,
    jsquad_slice: JsquadSet,
) -> None:
    """The real service, driven like the Go orchestrator, every SEARCH answered by the shipped SQL."""
    corpus = _Counting(request.getfixturevalue(corpus_fixture))
    questions = _slice_questions(jsquad_slice, 23)
    gold_pages = 0
    async with httpx.AsyncClient(base_url=live_service.base_url, timeout=30) as client:
        for index, (chunk, question) in enumerate(questions):
            result = await run_question(client, corpus, question, request_id=f"pg-{index}", vector=vector)
            assert result.action == "COMPLETE", (question, result.final)
            searches = [s for s in result.steps if s["action"] == "SEARCH"]
            assert searches
            assert all(s["queries_text"] for s in searches)
            evidence = {(e["document_id"], p) for e in result.final["evidence"] for p in e["pages"]}
            assert chunk.document_id in {d for d, _ in evidence}, (question, result.final["evidence"])
            gold_pages += (chunk.document_id, chunk.page) in evidence
    assert gold_pages / len(questions) >= 0.8, f"{gold_pages}/{len(questions)}"
    assert corpus.hits["text"] > 0
    assert (corpus.hits["vector"] > 0) is vector


class _Counting:
    """A search side that counts the hits PostgreSQL returned, per kind of search."""

    def __init__(self, inner: PostgresCorpus) -> None:
        self.inner = inner
        self.hits = {"text": 0, "vector": 0}

    def text_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        found = self.inner.text_search(query, k)
        self.hits["text"] += len(found)
        return found

    def vector_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        found = self.inner.vector_search(query, k)
        self.hits["vector"] += len(found)
        return found


@pytest.mark.parametrize("name", ["schema", "schema_vector", "search_text", "search_vector"])
def test_the_readme_shows_the_sql_files_verbatim(name: str) -> None:
    """The Go team copies the SQL from the README: it must be the SQL these tests run."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"```sql\n{sql(name).rstrip()}\n```" in readme


def test_a_connection_the_server_dropped_is_opened_again(fresh_database: str) -> None:
    """`pg_terminate_backend` between two steps used to end the loop with psycopg.errors.AdminShutdown."""
    with _tiny(fresh_database, {"tower": "東京タワーの高さは333メートル。", "tokyo": "東京は日本の首都。"}) as corpus:
        assert _ids(corpus, "タワー") == ["tower"]
        with psycopg.connect(fresh_database, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert ended == (1,)
        assert _ids(corpus, "タワー") == ["tower"]
        assert corpus.size == 2
        with psycopg.connect(fresh_database, autocommit=True) as admin:
            admin.execute("DROP TABLE chunks")
        with pytest.raises(psycopg.errors.UndefinedTable):  # an error on a live connection is the caller's
            _ids(corpus, "タワー")


@pytest.mark.parametrize(
    ("conninfo", "environment", "timeout"),
    [
        ("host=db dbname=chunks", None, postgres.CONNECT_TIMEOUT_S),
        ("postgresql://db/chunks", None, postgres.CONNECT_TIMEOUT_S),
        ("host=db dbname=chunks connect_timeout=3", None, None),  # the caller's own
        ("postgresql://db/chunks?connect_timeout=3", None, None),
        ("host=db dbname=chunks", "3", None),  # PGCONNECT_TIMEOUT, which libpq reads
    ],
)
def test_a_connection_has_a_timeout_unless_the_caller_chose_one(
    conninfo: str, environment: str | None, timeout: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(psycopg, "connect", lambda conninfo, **kwargs: calls.append(kwargs))
    if environment is None:
        monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("PGCONNECT_TIMEOUT", environment)
    postgres.connect(conninfo)
    assert calls == [{"autocommit": True, **({"connect_timeout": timeout} if timeout else {})}]


def test_a_server_that_never_answers_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A listener that accepts no connection (a hung server): the loop used to wait for ever."""
    monkeypatch.setattr(postgres, "CONNECT_TIMEOUT_S", 1)
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        release = threading.Timer(15, silent.close)  # without a timeout, the connection fails only then
        release.start()
        started = time.monotonic()
        try:
            with pytest.raises(psycopg.OperationalError):
                PostgresCorpus(f"host=127.0.0.1 port={port} user=postgres dbname=postgres")
        finally:
            release.cancel()
        assert time.monotonic() - started < 5


def test_vector_search_is_on_only_when_the_searched_table_has_embeddings(fresh_database: str) -> None:
    """An `embedding` column of a `chunks` table in another schema used to switch it on (then UndefinedColumn)."""
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA archive; CREATE TABLE archive.chunks (id int, embedding real[])")
    with _tiny(fresh_database, {"tower": "東京タワーの高さは333メートル。"}) as corpus:
        assert not corpus.vector
        with pytest.raises(RuntimeError, match="pgvector"):
            corpus.vector_search("東京タワー", 3)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("ALTER DATABASE " + conn.info.dbname + " SET search_path = archive, public")
    with PostgresCorpus(fresh_database) as corpus:  # now archive.chunks is the table `FROM chunks` reads
        assert corpus.vector


def test_a_database_without_a_chunks_table_is_named_at_once(fresh_database: str) -> None:
    with pytest.raises(NoChunksTable, match=r"sql/schema\.sql"):
        PostgresCorpus(fresh_database)
