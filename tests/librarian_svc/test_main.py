"""`python -m librarian_svc` start-up: what `main` hands to uvicorn, run in-process with uvicorn stubbed."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from librarian_svc import log_setup
from librarian_svc.__main__ import main


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """What `uvicorn.run` saw: its arguments and the collector's state at the moment serving starts."""
    seen: dict[str, Any] = {}

    def fake_run(app: object, **kwargs: Any) -> None:
        seen.update(kwargs, app=app, gc_enabled=gc.isenabled(), frozen=gc.get_freeze_count())

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.setattr(log_setup, "configure_logging", lambda *_: None)  # leave the suite's logging alone
    monkeypatch.setenv("PORT", "8123")
    monkeypatch.setenv("LLM_PROVIDER", "heuristic")
    try:
        yield seen
    finally:
        gc.unfreeze()
        gc.enable()


def test_start_up_objects_are_frozen_out_of_the_collector_before_serving(served: dict[str, Any]) -> None:
    # A full collection over the start-up heap stalls every in-flight request for over 100 ms.
    gc.unfreeze()
    assert main() == 0
    assert served["port"] == 8123
    assert served["gc_enabled"] is True
    assert served["frozen"] > 10_000


def test_a_configuration_error_leaves_the_collector_on(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PORT", "not-a-port")
    assert main() == 2
    assert "configuration error" in capsys.readouterr().err
    assert gc.isenabled()
    assert served == {}
