"""The benchmarks' service variants patch each worker's process through the app factory uvicorn calls there."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

import graphs.librarian.candidates as candidates
import graphs.llm.unobserved_call as unobserved_call
from bench import blocking_variant, thinking_floor_variant
from librarian_svc import workers


@pytest.mark.parametrize(
    ("variant", "patched", "name", "replacement"),
    [
        (blocking_variant, unobserved_call, "reply", blocking_variant.blocking_reply),
        (thinking_floor_variant, candidates, "pool_steps", thinking_floor_variant.first_hits_pool_steps),
    ],
    ids=["blocking", "thinking_floor"],
)
def test_each_worker_s_app_factory_patches_its_own_process(
    monkeypatch: pytest.MonkeyPatch, variant: ModuleType, patched: ModuleType, name: str, replacement: Any
) -> None:
    """Workers are separate processes: a patch made only in `__main__` would leave every worker unpatched."""
    built = object()
    monkeypatch.setattr(patched, name, getattr(patched, name))  # restored after the test
    monkeypatch.setattr(workers, "create_worker_app", lambda: built)
    assert f"{variant.__name__}:{variant.create_app.__name__}" == variant.APP_FACTORY
    assert variant.create_app() is built
    assert getattr(patched, name) is replacement
