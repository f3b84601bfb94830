"""Run the GRACE curl + jq contract scripts against a real server over a real socket.

Once GRACE is registered in the app, that is the `python -m librarian_svc` process of `live_service`;
until then, the same app with the GRACE controller added, served by uvicorn on a loopback port.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.graphs.grace.helpers import grace_app, grace_registered, serve_in_thread
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


@pytest.fixture(name="grace_url", scope="module")
def fixture_grace_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if grace_registered():
        yield request.getfixturevalue("live_service").base_url
        return
    with grace_app() as app, serve_in_thread(app) as base_url:
        yield base_url


def test_grace_contract_script(grace_url: str) -> None:
    result = _run("grace.sh", grace_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


@pytest.mark.parametrize(
    ("mode", "reply"),
    [("slow", Reply(content="{}", delay_s=1.5)), ("failing", Reply(status=503, content="overloaded"))],
)
def test_grace_model_error_contract(
    start_live_service: Callable[..., LiveService], llm_server: FakeLLMServer, mode: str, reply: Reply
) -> None:
    llm_server.default_reply = reply
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "OPENAI_BASE_URL": llm_server.url,
        "LLM_MODEL": "fake",
        "LLM_MAX_RETRIES": "1",
        "LLM_TIMEOUT_MS": "2000",
    }
    if grace_registered():
        result = _run("grace_model_errors.sh", start_live_service(env).base_url, MODE=mode)
    else:
        with grace_app(env) as app, serve_in_thread(app) as base_url:
            result = _run("grace_model_errors.sh", base_url, MODE=mode)
    assert result.returncode == 0, result.stdout + result.stderr
