"""Run a script in a fresh interpreter and read the JSON it prints last: for what one process cannot undo.

Import-time effects (which modules a build loads), process-wide settings (the collector, the allocator) and
environment-driven start-up are only seen clean in a process of their own. The script reports with one
`print(json.dumps(...))` as its last line of output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from tests.support.live_service import PROJECT_ROOT


def last_json_line(
    script: str, *args: str, env: Mapping[str, str] | None, timeout: float = 120, exit_status: int = 0
) -> Any:
    """The JSON value of the script's last line of output; the test fails with its stderr on another exit status.

    `env=None` inherits this process's environment; otherwise the script gets `env` alone.
    """
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=PROJECT_ROOT,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == exit_status, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
