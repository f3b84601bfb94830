"""Start the real service (`python -m librarian_svc`) on a free port, as a user or Cloud Run would.

Used by the live-service fixtures, the curl contract tests, the shutdown test and benchmarks.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from librarian_svc.settings import ENV_DEFAULTS

PROJECT_ROOT = Path(__file__).resolve().parents[2]

CALLER_ONLY_PREFIXES = (
    "LLM_",
    "OPENAI_",
    "GOOGLE_",
    "AZURE_",
    "GEMINI_",
    "EMBEDDING_",
    "GRACE_",
    "LANGSMITH_",
    "LANGCHAIN_",
)
"""Provider keys and tracing switches: a service under test gets them only from its test or benchmark."""


def environment_without_service_settings() -> dict[str, str]:
    """This process's environment minus everything the service reads as configuration.

    A service under test runs with its documented defaults plus what its test or benchmark passes, never with
    what the shell that started the run happened to export (`bench.tools.child_env` alone passes `WEB_CONCURRENCY`
    back on, on purpose): `LOG_LEVEL=warning python -m bench.X` once left
    `bench.librarian_concurrency`'s service without its access line, which a deployed service writes for
    every request, so its CPU a step was measured low.
    """
    return {
        name: value
        for name, value in os.environ.items()
        if name not in ENV_DEFAULTS and not name.startswith(CALLER_ONLY_PREFIXES)
    }


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveService:
    """A running service process and where to reach it."""

    process: subprocess.Popen[bytes]
    base_url: str
    port: int
    log_path: Path

    def logs(self) -> str:
        """Everything the process wrote so far (stdout and stderr)."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it does not exit in time; returns the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


def start_service(
    env: Mapping[str, str] | None = None,
    *,
    log_dir: Path,
    port: int | None = None,
    ready_timeout: float = 30.0,
    extra_args: list[str] | None = None,
    module: str | None = None,
    wait_for: str | None = "/ready",
) -> LiveService:
    """Start `python -m librarian_svc` (or `module`) with a clean environment plus `env`; wait for `wait_for` to be 200.

    `wait_for="/health"` returns as soon as one worker serves, before the instance is ready; None at once.
    """
    port = port or free_port()
    full_env = {
        **environment_without_service_settings(),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_FORMAT": "json",
        "LLM_PROVIDER": "heuristic",
        "PYTHONPATH": str(PROJECT_ROOT),
        # One worker unless a test asks for more: the default (every CPU) would double each test server.
        "WEB_CONCURRENCY": "1",
        **(env or {}),
    }
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path, starts = log_dir / f"service-{port}.log", 1
    while log_path.exists():  # a service started again on the same port keeps the first one's log
        starts += 1
        log_path = log_dir / f"service-{port}-{starts}.log"
    with log_path.open("wb") as log_file:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", module or "librarian_svc", *(extra_args or [])],
            cwd=PROJECT_ROOT,
            env=full_env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    service = LiveService(process=process, base_url=f"http://127.0.0.1:{port}", port=port, log_path=log_path)
    deadline = time.monotonic() + ready_timeout
    while wait_for is not None and time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"service exited with {process.returncode}:\n{service.logs()}")
        try:
            if httpx.get(f"{service.base_url}{wait_for}", timeout=1.0).status_code == 200:
                return service
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    if wait_for is None:
        return service
    service.stop()
    raise RuntimeError(f"service: {wait_for} not 200 after {ready_timeout}s:\n{service.logs()}")
