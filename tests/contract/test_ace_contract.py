"""Run the ACE curl + jq contract scripts against a real HTTP server (they also run against any deployment).

Once ACE is registered in the service (ROUTE_HANDLERS), the scripts run against `python -m librarian_svc`
(the `live_service` fixtures); until then, against the same app served by uvicorn on a thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import uvicorn

from librarian_svc.app import ROUTE_HANDLERS
from librarian_svc.controllers.ace import AceController
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.graphs.ace.helpers import ace_app
from tests.support.live_service import LiveService, free_port

pytestmark = [pytest.mark.contract, pytest.mark.live]

HERE = Path(__file__).resolve().parent
REGISTERED = AceController in ROUTE_HANDLERS


def run_script(script: str, base_url: str, **env: str) -> subprocess.CompletedProcess[str]:
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


class ThreadServer:
    """The ACE app on a real socket, served by uvicorn on a daemon thread."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        config = uvicorn.Config(ace_app(env), host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the ACE test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


ServeFn = Callable[[Mapping[str, str] | None], str]


@pytest.fixture(name="serve")
def fixture_serve(request: pytest.FixtureRequest) -> Iterator[ServeFn]:
    """A base URL of a server with ACE and the given environment."""
    servers: list[ThreadServer] = []

    def serve(env: Mapping[str, str] | None = None) -> str:
        if REGISTERED:
            if not env:
                service: LiveService = request.getfixturevalue("live_service")
                return service.base_url
            start: Callable[..., LiveService] = request.getfixturevalue("start_live_service")
            return start(env).base_url
        server = ThreadServer(env).__enter__()
        servers.append(server)
        return server.base_url

    yield serve
    for server in servers:
        server.__exit__(None, None, None)


def test_ace_contract_script(serve: ServeFn) -> None:
    result = run_script("ace.sh", serve(None))
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout


@pytest.mark.parametrize(
    ("mode", "reply"),
    [("slow", Reply(content="{}", delay_s=3)), ("failing", Reply(status=503, content="overloaded"))],
)
def test_ace_model_error_contract(serve: ServeFn, llm_server: FakeLLMServer, mode: str, reply: Reply) -> None:
    llm_server.default_reply = reply
    base_url = serve(
        {
            "LLM_PROVIDER": "openai-compatible",
            "OPENAI_BASE_URL": llm_server.url,
            "LLM_MODEL": "fake",
            "LLM_MAX_RETRIES": "1",
            "LLM_TIMEOUT_MS": "2000",
        }
    )
    result = run_script("ace_model_errors.sh", base_url, MODE=mode)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
