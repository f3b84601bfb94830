"""`/ready` with several workers: not ready until the supervisor's notice says every worker serves.

The notice travels down each worker's health pipe (`instance_readiness`), so no file, path or temporary
directory is involved; the supervisor's side is in test_supervisor.py, the whole instance in test_workers.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from librarian_svc import instance_readiness
from librarian_svc.app import create_app
from librarian_svc.instance_readiness import WorkersServing
from librarian_svc.settings import load_settings


@pytest.fixture(autouse=True)
def _not_a_worker() -> Iterator[None]:
    """Each test starts as a process no supervisor started, and leaves the suite that way."""
    instance_readiness.reset()
    yield
    instance_readiness.reset()


def test_a_single_process_is_ready_on_its_own() -> None:
    assert WorkersServing.from_environment()() is True
    instance_readiness.note_every_worker_serves()  # a stray notice changes nothing
    assert WorkersServing.from_environment()() is True


def test_a_worker_is_ready_once_told_and_stays_ready() -> None:
    serving = WorkersServing.from_environment()
    instance_readiness.expect_supervisor()
    assert serving() is False
    instance_readiness.note_every_worker_serves()
    assert serving() is True
    assert serving() is True  # nothing can take it back: a replacement later does not make the instance unready


def test_ready_answers_503_until_every_worker_serves() -> None:
    instance_readiness.expect_supervisor()
    with TestClient(create_app(load_settings({"LLM_PROVIDER": "heuristic"}))) as client:
        waiting = client.get("/ready")
        assert waiting.status_code == 503
        assert waiting.json()["status"] == "not_ready"
        instance_readiness.note_every_worker_serves()
        ready = client.get("/ready")
        assert ready.status_code == 200
        assert ready.json()["status"] == "ready"
