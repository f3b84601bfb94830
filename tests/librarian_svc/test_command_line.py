"""`python -m librarian_svc` takes no arguments: `--help` answers, anything else is a usage error, neither serves.

It used to ignore its arguments: `python -m librarian_svc --help` started the service listening on every
interface. Run as a user would, in a process of its own; a regression would serve, so each run is bounded.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from librarian_svc.__main__ import USAGE_ERROR_STATUS, command_line
from tests.support.live_service import PROJECT_ROOT, environment_without_service_settings, free_port

BOUND_S = 20.0
"""Ample for an interpreter to print its usage; a command that serves instead would still be running."""


def run_command(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m librarian_svc ARGS` on a loopback port nobody uses (where a regression would listen)."""
    env = environment_without_service_settings() | {
        "HOST": "127.0.0.1",
        "PORT": str(free_port()),
        "PYTHONPATH": str(PROJECT_ROOT),
        "WEB_CONCURRENCY": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "librarian_svc", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_and_exits_0(flag: str) -> None:
    done = run_command(flag)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m librarian_svc\n")
    assert "README.md" in done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("args", [["--port", "9000"], ["serve"], ["--help", "--port"], ["-v"]])
def test_any_other_argument_is_one_line_and_exit_status_2(args: list[str]) -> None:
    done = run_command(*args)
    assert done.returncode == USAGE_ERROR_STATUS
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"librarian-svc: usage error: unexpected argument {args[0]!r}: settings are environment variables "
        "(python -m librarian_svc --help)"
    ]


def test_no_arguments_serves() -> None:
    """Only the command line's answer is looked at here; serving with no arguments is every live test's start."""
    assert command_line([]) is None
