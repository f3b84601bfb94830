"""The README documents every environment variable the service reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from librarian_svc.settings import ENV_DEFAULTS, PROJECT_ROOT

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


NO_DEFAULT = ("–", "per provider")
"""What the table says of a variable whose default is empty: unset, or chosen by the provider."""


@pytest.mark.parametrize("name", list(ENV_DEFAULTS))
def test_the_table_states_the_default_the_code_uses(name: str) -> None:
    """`ENV_DEFAULTS` is the one place of defaults: the table said `./config` where the code read `<project>/config`."""
    row = re.search(rf"^\| `{name}` \| ([^|]*) \|", README, re.MULTILINE)
    assert row is not None, f"{name} has no row of its own"
    default = ENV_DEFAULTS[name].replace(str(PROJECT_ROOT), "<project>")
    if default:
        assert row.group(1) == f"`{default}`"
    else:
        assert row.group(1) in NO_DEFAULT
