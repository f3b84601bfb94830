"""The README documents every environment variable the service reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from librarian_svc.settings import ENV_DEFAULTS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
PROVIDER_VARS = [
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_DEPLOYMENT",
    "AZURE_OPENAI_API_VERSION",
]


@pytest.mark.parametrize("name", [*ENV_DEFAULTS, *PROVIDER_VARS])
def test_variable_is_in_the_configuration_table(name: str) -> None:
    assert re.search(rf"^\| [^|]*`{name}`", README, re.MULTILINE), f"{name} missing from the README table"


def test_readme_opens_with_the_two_commands() -> None:
    head = README[:1200]
    assert "make run" in head
    assert "make test" in head
