"""`python -m reference_orchestrator`: answer a question from a local corpus, printing the loop step by step.

Without --base-url it starts the service itself (`python -m librarian_svc` on a free port) and stops
it afterwards; with --base-url it drives any running deployment.

    python -m reference_orchestrator --question "梅雨がみられるのはどの期間？"
    python -m reference_orchestrator --base-url http://127.0.0.1:8080 --corpus chunks.jsonl --question "..."

Searches run in-process (BM25 + cosine) by default. `--backend postgres` runs them as the Go side does,
with reference_orchestrator/sql/ on PostgreSQL: on a temporary server loaded with the corpus, or with
`--postgres-dsn` on your database (whose `chunks` table was made with sql/schema.sql; `--postgres-dsn`
implies `--backend postgres`, and takes no `--corpus`: the table is the corpus).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import psycopg

from reference_orchestrator import pg_server
from reference_orchestrator.corpus import Corpus, SearchBackend, jsquad_chunks
from reference_orchestrator.loop import ServiceError, run_question
from reference_orchestrator.postgres import NoChunksTable, PostgresCorpus

PROJECT_ROOT = Path(__file__).resolve().parent.parent
JSQUAD = PROJECT_ROOT.parent / "shared" / "data" / "jsquad" / "valid-v1.3.json"
DEFAULT_QUESTION = "梅雨がみられるのはどの期間？"
PROG = "python -m reference_orchestrator"
READY_TIMEOUT_S = 30.0
"""How long the service started here may take to answer 200 on /ready."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def local_service(command: Sequence[str] = (), ready_timeout: float = READY_TIMEOUT_S) -> Iterator[str]:
    """Start the service (`command`, default `python -m librarian_svc`) on a free loopback port; yield its base URL.

    It is stopped on exit. One that exits, or is not ready within `ready_timeout` seconds, ends the command
    with a message (SystemExit) instead of a loop whose first call fails with a connection error.
    """
    port = _free_port()
    env = {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_LEVEL": "warning",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    command = command or [sys.executable, "-m", "librarian_svc"]
    process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env)  # noqa: S603 - the caller's argv, no shell
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(process, base_url, ready_timeout)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until_ready(process: subprocess.Popen[bytes], base_url: str, timeout: float) -> None:
    """Return once `/ready` answers 200.

    Raises:
        SystemExit: the process exited, or `timeout` seconds passed without a 200.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/ready", timeout=1).status_code == 200:
                return
        if process.poll() is not None:
            raise SystemExit(f"the service exited with status {process.returncode}")
        time.sleep(0.1)
    raise SystemExit(f"the service started at {base_url} did not answer 200 on /ready within {timeout:g} s")


def print_step(call: int, answer: dict[str, Any]) -> None:
    """One think step, as a person would want to read it."""
    action = answer.get("action")
    print(f"\n── think #{call}: {action}")
    if action == "SEARCH":
        print(f"   rationale     : {answer['rationale']}")
        print(f"   queries_text  : {answer['queries_text']}")
        print(f"   queries_vector: {answer['queries_vector']}")
    elif action == "COMPLETE":
        for item in answer["evidence"]:
            print(f"   evidence      : {item['document_id']} pages {item['pages']} (score {item['score']})")
            print(f"     why         : {item['why_relevant']}")
            for snippet in item["snippets"]:
                print(f"     snippet     : {snippet[:160]}{'…' if len(snippet) > 160 else ''}")
        print(f"   coverage_notes: {answer['coverage_notes']}")
    else:
        print(f"   {answer.get('error_type')}: {answer.get('message')}")


def load_corpus(path: str | None) -> Corpus:
    """A JSONL corpus, or the JSQuAD paragraphs by default."""
    if path:
        return Corpus.from_jsonl(Path(path))
    if not JSQUAD.is_file():
        raise SystemExit(f"JSQuAD not found at {JSQUAD}; pass --corpus chunks.jsonl")
    return Corpus([chunk for chunk, _ in jsquad_chunks(JSQUAD)])


@contextlib.contextmanager
def search_side(args: argparse.Namespace) -> Iterator[SearchBackend]:
    """The backend the arguments ask for; a temporary PostgreSQL is stopped on exit."""
    if args.backend == "bm25":
        yield load_corpus(args.corpus)
    elif args.postgres_dsn:
        with PostgresCorpus(args.postgres_dsn) as backend:
            yield backend
    else:
        chunks = load_corpus(args.corpus).chunks
        vector = not args.no_vector
        with (
            pg_server.temporary_postgres(vector=vector) as server,
            PostgresCorpus.create(server.conninfo, chunks, vector=vector) as backend,
        ):
            yield backend


def describe(corpus: SearchBackend) -> str:
    """One line about the search side, for the header."""
    if isinstance(corpus, PostgresCorpus):
        return f"{corpus.size} chunks in PostgreSQL ({'text + pgvector' if corpus.vector else 'text only'})"
    if isinstance(corpus, Corpus):
        return f"{len(corpus.chunks)} chunks (in-process BM25 + cosine)"
    return type(corpus).__name__


async def drive(base_url: str, corpus: SearchBackend, question: str, vector: bool) -> str:
    """Run the loop against base_url and print every step; return the final action."""
    print(f"question: {question}\nservice : {base_url}\ncorpus  : {describe(corpus)}")
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        result = await run_question(client, corpus, question, request_id="demo", vector=vector, on_step=print_step)
    return result.action


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, start the service if needed, drive one question.

    Exit status 0 on COMPLETE, 1 otherwise; a service, proxy or database that fails past the loop's retries
    is one line on stderr (what answered, and how), not a traceback.
    """
    args = parse_args(argv)
    try:
        action = run(args)
    except (ServiceError, httpx.HTTPError, psycopg.OperationalError, NoChunksTable) as error:
        raise SystemExit(f"error: {type(error).__name__}: {error}") from None
    sys.exit(0 if action == "COMPLETE" else 1)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments, `--backend` resolved: `--postgres-dsn` implies postgres; combinations that ignore one are errors.

    An argument the command would silently not use (a corpus besides a database, a DSN with the in-process
    search) is a usage error (exit status 2), so a run never answers from another corpus than the one asked for.
    """
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--base-url", help="a running service; default: start one locally")
    parser.add_argument("--corpus", help="JSONL of {document_id, page, chunk_id, text}; default: JSQuAD")
    parser.add_argument("--no-vector", action="store_true", help="answer only queries_text")
    parser.add_argument(
        "--backend", choices=["bm25", "postgres"], help="who runs the searches (default: bm25; postgres with a DSN)"
    )
    parser.add_argument(
        "--postgres-dsn", help="an existing database (libpq string) whose chunks table is searched; implies postgres"
    )
    args = parser.parse_args(argv)
    if args.postgres_dsn is not None:
        if args.backend == "bm25":
            parser.error("--postgres-dsn searches that database: it cannot go with --backend bm25")
        if args.corpus is not None:
            parser.error("--corpus cannot go with --postgres-dsn: the database's chunks table is the corpus")
        args.backend = "postgres"
    args.backend = args.backend or "bm25"
    return args


def run(args: argparse.Namespace) -> str:
    """The search side and the service the arguments ask for, one question driven through them; its final action."""
    with search_side(args) as corpus:
        vector = not args.no_vector and not (isinstance(corpus, PostgresCorpus) and not corpus.vector)
        if args.base_url:
            return asyncio.run(drive(args.base_url, corpus, args.question, vector))
        with local_service() as base_url:
            return asyncio.run(drive(base_url, corpus, args.question, vector))


if __name__ == "__main__":
    main()
