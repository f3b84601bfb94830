"""`python -m graphs.ace`: import a real ACE playbook into the store, export it back, list datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphs.ace.__main__ import main
from graphs.ace.playbook_store import PlaybookStore
from tests.graphs.ace.helpers import ONLINE, read_text


def test_import_export_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(ONLINE), "--dataset", "appworld", "--data-dir", str(tmp_path)]) == 0
    assert "saved 359 bullets" in capsys.readouterr().out
    assert len(PlaybookStore(tmp_path).load("appworld").bullets) == 359
    assert main(["export", "--dataset", "appworld", "--data-dir", str(tmp_path)]) == 0
    exported = capsys.readouterr().out
    assert [x for x in exported.split("\n") if x.strip()] == [x for x in read_text(ONLINE).split("\n") if x.strip()]
    assert main(["list", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == ["appworld"]


def test_import_refuses_sections_the_dataset_does_not_have(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "p.txt"
    source.write_text("## MADE UP\n[x-00001] content\n", encoding="utf-8")
    assert main(["import", str(source), "--dataset", "appworld", "--data-dir", str(tmp_path)]) == 1
    assert "unknown section 'made_up'" in capsys.readouterr().err
    assert (
        main(["import", str(source), "--dataset", "anything", "--data-dir", str(tmp_path)]) == 0
    )  # default: permissive


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["import", "missing.txt"], "No such file"),
        (["export", "--dataset", "../x"], "invalid dataset name"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main([*argv, "--data-dir", str(tmp_path)]) == 1
    assert message in capsys.readouterr().err
