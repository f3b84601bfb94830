"""The data sets in `../shared/data` (next to the project): full JSQuAD and the AppWorld ACE playbooks.

Tests that need them fail, naming the missing path, when the folder is absent: a skip would hide that
the recall and real-playbook checks never ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from librarian_svc.settings import PROJECT_ROOT

SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
JSQUAD_VALID = SHARED_DATA / "jsquad" / "valid-v1.3.json"
ACE_APPWORLD = SHARED_DATA / "ace-appworld"


def require_shared(path: Path) -> Path:
    """`path`, or fail the calling test with the path it needs (never a skip)."""
    if not path.exists():
        pytest.fail(f"{path} is missing: this test needs the shared data sets in {SHARED_DATA}", pytrace=False)
    return path
