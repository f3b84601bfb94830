"""`/ready` with several workers: not ready until the supervisor's marker says every worker serves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from litestar.testing import TestClient

from librarian_svc.app import create_app
from librarian_svc.instance_readiness import MARKER_ENV, ServingMarker, WorkersServing
from librarian_svc.settings import load_settings


def test_a_single_process_is_ready_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MARKER_ENV, raising=False)
    assert WorkersServing.from_environment()() is True


def test_a_worker_is_ready_once_the_marker_exists_and_stays_ready(tmp_path: Path) -> None:
    marker = tmp_path / "every-worker-serves"
    serving = WorkersServing(marker)
    assert serving() is False
    marker.touch()
    assert serving() is True
    marker.unlink()  # a worker replaced later does not make the instance unready again
    assert serving() is True


def test_the_supervisor_marker_is_handed_on_set_once_and_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MARKER_ENV, "")  # recorded, so the marker's path is taken out of the environment afterwards
    marker = ServingMarker()
    try:
        assert os.environ[MARKER_ENV] == str(marker.path)
        seen_by_worker = WorkersServing.from_environment()
        assert seen_by_worker() is False
        assert marker.set() is True
        assert marker.set() is False  # already ready: said once
        assert seen_by_worker() is True
    finally:
        marker.remove()
    assert not marker.directory.exists()


def test_ready_answers_503_until_every_worker_serves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    marker = tmp_path / "every-worker-serves"
    monkeypatch.setenv(MARKER_ENV, str(marker))
    with TestClient(create_app(load_settings({"LLM_PROVIDER": "heuristic"}))) as client:
        waiting = client.get("/ready")
        assert waiting.status_code == 503
        assert waiting.json()["status"] == "not_ready"
        marker.touch()
        ready = client.get("/ready")
        assert ready.status_code == 200
        assert ready.json()["status"] == "ready"
