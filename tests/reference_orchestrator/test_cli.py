"""`python -m reference_orchestrator`: arguments it would not use are usage errors, and a service that never
gets ready ends it with a message."""

from __future__ import annotations

import sys
import time

import pytest

from reference_orchestrator import __main__ as cli


@pytest.mark.parametrize(
    ("argv", "backend"),
    [
        ([], "bm25"),
        (["--backend", "postgres"], "postgres"),  # a temporary server loaded with the corpus
        (["--postgres-dsn", "host=db dbname=chunks"], "postgres"),  # used to be ignored: BM25 over JSQuAD
        (["--postgres-dsn", "host=db", "--backend", "postgres"], "postgres"),
    ],
)
def test_the_backend_the_arguments_ask_for(argv: list[str], backend: str) -> None:
    assert cli.parse_args(argv).backend == backend


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--postgres-dsn", "host=db", "--backend", "bm25"], "--postgres-dsn searches that database"),
        (["--postgres-dsn", "host=db", "--corpus", "chunks.jsonl"], "--corpus cannot go with --postgres-dsn"),
        (["--backend", "postgres", "--postgres-dsn", "host=db", "--corpus", "c.jsonl"], "--corpus cannot go"),
    ],
)
def test_an_argument_the_command_would_ignore_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_help_names_the_command_to_type(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m reference_orchestrator ")  # not __main__.py


def test_a_service_that_never_gets_ready_ends_the_command() -> None:
    """It used to be driven all the same once /ready had not answered for 30 s."""
    started = time.monotonic()
    never_ready = [sys.executable, "-c", "import time; time.sleep(60)"]
    with (
        pytest.raises(SystemExit, match=r"did not answer 200 on /ready within 0.5 s"),
        cli.local_service(never_ready, ready_timeout=0.5),
    ):
        pytest.fail("a service that is not ready was handed to the loop")
    assert time.monotonic() - started < 10  # and the process was stopped, not waited for


def test_a_service_that_exits_ends_the_command() -> None:
    with (
        pytest.raises(SystemExit, match="the service exited with status 3"),
        cli.local_service([sys.executable, "-c", "raise SystemExit(3)"], ready_timeout=10),
    ):
        pytest.fail("a service that exited was handed to the loop")
