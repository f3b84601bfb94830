"""A missing ../shared data set fails the test that needs it, naming the path: never a skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shared_data import require_shared


def test_a_missing_data_set_fails_naming_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "jsquad" / "valid-v1.3.json"
    with pytest.raises(pytest.fail.Exception, match=f"{missing} is missing"):
        require_shared(missing)


def test_a_present_data_set_is_returned(tmp_path: Path) -> None:
    assert require_shared(tmp_path) == tmp_path
