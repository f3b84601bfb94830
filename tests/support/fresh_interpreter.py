"""Run a script in a fresh interpreter: for what one process cannot undo.

Import-time effects (which modules a build loads), process-wide settings (the collector, the allocator, logging)
and environment-driven start-up are only seen clean in a process of their own. `run_script` is the one way the
tests start such a script; `last_json_line` reads the report of a script that ends with one
`print(json.dumps(...))`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.support.live_service import PROJECT_ROOT


def run_script(
    script: str,
    *args: str,
    env: Mapping[str, str] | None,
    timeout: float = 120,
    exit_status: int = 0,
    cwd: Path = PROJECT_ROOT,
) -> subprocess.CompletedProcess[str]:
    """`python -c script *args` run to its end; the test fails with its stderr on another exit status.

    `env=None` inherits this process's environment; otherwise the script gets `env` alone.
    """
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == exit_status, done.stderr
    return done


def last_json_line(
    script: str, *args: str, env: Mapping[str, str] | None, timeout: float = 120, exit_status: int = 0
) -> Any:
    """The JSON value of the script's last line of output (`run_script`, whose exit status it checks)."""
    done = run_script(script, *args, env=env, timeout=timeout, exit_status=exit_status)
    return json.loads(done.stdout.strip().splitlines()[-1])
