"""A service under test is configured by its test or benchmark only, never by the shell that started the run."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.tools import child_env
from tests.support.live_service import environment_without_service_settings, start_service

CALLER = {
    "LOG_LEVEL": "warning",  # the shell's, not the service's: a benchmark run so once measured no access line
    "REQUEST_TIMEOUT_MS": "1",
    "STATE_SIGNING_KEYS": "a-key-of-the-shell",
    "OPENAI_API_KEY": "sk-not-for-the-service",
    "LANGSMITH_TRACING": "true",
    "EMBEDDING_PROVIDER": "openai",
    "UNRELATED_TO_THE_SERVICE": "kept",
}


@pytest.fixture
def caller_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CALLER.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("caller_environment")
def test_the_callers_service_settings_are_left_out() -> None:
    env = environment_without_service_settings()
    assert env["UNRELATED_TO_THE_SERVICE"] == "kept"
    assert not set(CALLER) - {"UNRELATED_TO_THE_SERVICE"} & set(env)


@pytest.mark.usefixtures("caller_environment")
def test_a_benchmark_server_logs_as_deployed_whatever_the_shell_exports() -> None:
    env = child_env({"PORT": "9"})
    assert env["LOG_LEVEL"] == "info"
    assert env["PORT"] == "9"
    assert "REQUEST_TIMEOUT_MS" not in env
    assert "LANGSMITH_TRACING" not in env
    assert "STATE_SIGNING_KEYS" not in env


@pytest.mark.usefixtures("caller_environment")
def test_a_live_service_gets_only_what_its_test_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    started: dict[str, Any] = {}

    class NotStarted:
        def __init__(self, argv: list[str], **kwargs: Any) -> None:
            started.update(kwargs)

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(subprocess, "Popen", NotStarted)
    start_service({"MAX_BODY_BYTES": "1024"}, log_dir=tmp_path, wait_for=None)
    env = started["env"]
    assert env["MAX_BODY_BYTES"] == "1024"
    assert env["UNRELATED_TO_THE_SERVICE"] == "kept"
    for name in set(CALLER) - {"UNRELATED_TO_THE_SERVICE"}:
        assert name not in env, name
