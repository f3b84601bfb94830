"""Run the curl + jq contract scripts against real server processes (they also run against any deployment).

`<agent>.sh` needs nothing but a running service; `<agent>_model_errors.sh` needs one whose model
misbehaves (MODE=slow or MODE=failing), which the loopback fake provides here.
"""

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
        errors="replace",  # a failing check prints a body cut at a byte count, maybe mid-character
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("script", ["health.sh", "librarian.sh", "ace.sh", "grace.sh", "proposal_quality.sh"])
def test_contract_script(live_service: LiveService, script: str) -> None:
    result = _run(script, live_service.base_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


def test_run_sh_runs_every_agent_script(live_service: LiveService) -> None:
    result = subprocess.run(
        ["bash", str(HERE / "run.sh")],
        env={**os.environ, "BASE_URL": live_service.base_url},
        capture_output=True,
        text=True,
        errors="replace",  # a failing check prints a body cut at a byte count, maybe mid-character
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for script in ("health.sh", "librarian.sh", "ace.sh", "grace.sh", "proposal_quality.sh"):
        assert f"{script}: " in result.stdout


@pytest.fixture(name="misbehaving_service")
def fixture_misbehaving_service(
    start_live_service: Callable[..., LiveService], llm_server: FakeLLMServer
) -> Callable[[str], LiveService]:
    """A service whose model is slow (every reply after 3 s) or failing (every call 503)."""

    def start(mode: str) -> LiveService:
        llm_server.default_reply = (
            Reply(content="{}", delay_s=3) if mode == "slow" else Reply(status=503, content="overloaded")
        )
        return start_live_service(
            {
                "LLM_PROVIDER": "openai-compatible",
                "OPENAI_BASE_URL": llm_server.url,
                "LLM_MODEL": "fake",
                "LLM_MAX_RETRIES": "1",
                "LLM_TIMEOUT_MS": "2000",
            }
        )

    return start


@pytest.mark.parametrize("mode", ["slow", "failing"])
def test_model_error_contracts(misbehaving_service: Callable[[str], LiveService], mode: str) -> None:
    service = misbehaving_service(mode)
    for script in ("librarian_model_errors.sh", "ace_model_errors.sh", "grace_model_errors.sh"):
        result = _run(script, service.base_url, MODE=mode)
        assert result.returncode == 0, script + "\n" + result.stdout + result.stderr
        assert " 0 failed" in result.stdout, script
