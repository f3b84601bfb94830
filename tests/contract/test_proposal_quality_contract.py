"""Run `proposal_quality.sh` (curl + jq) against a real server process, as any deployment would be checked.

Once the proposal-quality routes are registered in the shared app this is the session `live_service`;
until then a service process is started whose app has them added (the same `python -m librarian_svc`
entry point, with the controller appended to the route list and the graph to the builders first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.graphs.proposal_quality.support import registered
from tests.support.live_service import PROJECT_ROOT, free_port

pytestmark = [pytest.mark.contract, pytest.mark.live]

HERE = Path(__file__).resolve().parent

LAUNCHER = """
import sys
from graphs.proposal_quality.graph import build_graph
from librarian_svc import __main__ as entry, app, services
from librarian_svc.controllers.proposal_quality import AGENT, ProposalQualityController
app.ROUTE_HANDLERS.append(ProposalQualityController)
services.GRAPH_BUILDERS[AGENT] = build_graph
sys.exit(entry.main())
"""


def _start_with_routes(log_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_", "GOOGLE_", "AZURE_", "GEMINI_"))}
    env |= {"HOST": "127.0.0.1", "PORT": str(port), "LOG_FORMAT": "json", "LLM_PROVIDER": "heuristic"}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    log_path = log_dir / "proposal-quality-service.log"
    with log_path.open("wb") as log:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{base_url}/ready", timeout=1.0).status_code == 200:
                return process, base_url
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    process.wait()
    raise RuntimeError(log_path.read_text(errors="replace"))


@pytest.fixture(name="pq_base_url")
def fixture_pq_base_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if registered():
        yield request.getfixturevalue("live_service").base_url
        return
    process, base_url = _start_with_routes(tmp_path)
    yield base_url
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_proposal_quality_contract(pq_base_url: str) -> None:
    if not (shutil.which("curl") and shutil.which("jq")):
        pytest.fail("curl and jq are required (the CI script installs them)")
    result = subprocess.run(
        ["bash", str(HERE / "proposal_quality.sh")],
        env={**os.environ, "BASE_URL": pq_base_url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
