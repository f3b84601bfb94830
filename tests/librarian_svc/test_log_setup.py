"""Logging set-up in a fresh interpreter (it is process-global): every line on stdout is one JSON record."""

from __future__ import annotations

import json

import pytest

from tests.support.fresh_interpreter import run_script

SCRIPT = """
import warnings
from librarian_svc.log_setup import configure_logging
configure_logging("json", "info")
warnings.warn("a library is unhappy", RuntimeWarning)
"""


def test_library_warnings_become_json_log_records() -> None:
    done = run_script(SCRIPT, env=None, timeout=60)
    assert done.stderr == ""
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 1
    assert records[0]["severity"] == "WARNING"
    assert "a library is unhappy" in records[0]["message"]
    assert records[0]["logger"] == "py.warnings"


CLIENT_SCRIPT = """
import logging
from librarian_svc.log_setup import configure_logging
configure_logging("json", "info")
for name in ("httpx", "httpx2", "httpcore", "httpcore2", "openai"):
    logging.getLogger(name).info("HTTP Request: POST http://model/v1/chat/completions")
    logging.getLogger(name).warning("retrying")
"""


def test_http_client_info_lines_are_silenced_but_warnings_kept() -> None:
    """The OpenAI SDK's client (httpx2) logs a line per model call: formatting it cost 0.5 ms of a think step."""
    done = run_script(CLIENT_SCRIPT, env=None, timeout=60)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["message"] for r in records] == ["retrying"] * 5
    assert {r["logger"] for r in records} == {"httpx", "httpx2", "httpcore", "httpcore2", "openai"}


STDERR_SCRIPT = """
import logging, sys
import structlog
from librarian_svc.log_setup import configure_logging
configure_logging({log_format!r}, "warning", stream=sys.stderr)
structlog.get_logger("ours").warning("our warning")
logging.getLogger("a_library").warning("a library's warning")
structlog.get_logger("ours").info("below the level")
"""


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_a_caller_can_keep_stdout_for_itself(log_format: str) -> None:
    """A benchmark prints its JSON report on stdout: the service's log lines go to the stream it names."""
    done = run_script(STDERR_SCRIPT.format(log_format=log_format), env=None, timeout=60)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2
    assert "our warning" in lines[0]
    assert "a library's warning" in lines[1]
