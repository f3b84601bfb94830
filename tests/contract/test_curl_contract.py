"""Run the curl + jq contract scripts against real server processes (they also run against any deployment)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.support.live_service import LiveService

pytestmark = [pytest.mark.contract, pytest.mark.live]

HERE = Path(__file__).resolve().parent


def _run(script: str, base_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    if not (shutil.which("curl") and shutil.which("jq")):
        pytest.fail("curl and jq are required (the CI script installs them)")
    return subprocess.run(
        ["bash", str(HERE / script)],
        env={**os.environ, "BASE_URL": base_url, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("script", ["health.sh", "librarian.sh"])
def test_contract_script(live_service: LiveService, script: str) -> None:
    result = _run(script, live_service.base_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


@pytest.mark.parametrize(
    ("mode", "reply"),
    [("slow", Reply(content="{}", delay_s=1.5)), ("failing", Reply(status=503, content="overloaded"))],
)
def test_model_error_contract(
    start_live_service: Callable[..., LiveService], llm_server: FakeLLMServer, mode: str, reply: Reply
) -> None:
    llm_server.default_reply = reply
    service = start_live_service(
        {
            "LLM_PROVIDER": "openai-compatible",
            "OPENAI_BASE_URL": llm_server.url,
            "LLM_MODEL": "fake",
            "LLM_MAX_RETRIES": "1",
            "LLM_TIMEOUT_MS": "2000",
        }
    )
    result = _run("librarian_model_errors.sh", service.base_url, MODE=mode)
    assert result.returncode == 0, result.stdout + result.stderr
