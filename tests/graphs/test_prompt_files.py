"""Prompt files: header comments stripped, `.txt` implied, no escaping the prompts directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphs.prompt_files import load_prompt, strip_header


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# vars: {x}\n# more\n\nHello {x}\n", "Hello {x}"),
        ("Hello\n# not a header\n", "Hello\n# not a header"),
        ("\n\n# late header\nbody", "body"),
        ("", ""),
    ],
)
def test_strip_header(text: str, expected: str) -> None:
    assert strip_header(text) == expected


@pytest.fixture(name="prompts_dir")
def prompts_dir_fixture(tmp_path: Path) -> Path:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "ask.txt").write_text("# {q}: the question\nAsk: {q}\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    return tmp_path / "agent"


@pytest.mark.parametrize("name", ["ask", "ask.txt"])
def test_load_prompt_from_a_directory(prompts_dir: Path, name: str) -> None:
    assert load_prompt(name, prompts_dir) == "Ask: {q}"


@pytest.mark.parametrize("name", ["missing", "../secret"])
def test_unknown_or_escaping_names_are_not_found(prompts_dir: Path, name: str) -> None:
    with pytest.raises(FileNotFoundError):
        load_prompt(name, prompts_dir)


def test_the_reask_prompt_documents_and_uses_its_variable() -> None:
    raw = (Path(__file__).resolve().parents[2] / "prompts" / "common" / "reask.txt").read_text(encoding="utf-8")
    assert raw.startswith("#")
    text = load_prompt("common/reask")
    assert "{errors}" in text
    assert not text.startswith("#")


def test_a_missing_prompt_is_not_cached_as_missing(prompts_dir: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_prompt("later", prompts_dir)
    (prompts_dir / "later.txt").write_text("Now here.", encoding="utf-8")
    assert load_prompt("later", prompts_dir) == "Now here."
