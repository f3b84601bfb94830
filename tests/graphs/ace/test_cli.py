"""`python -m graphs.ace`: import a real ACE playbook into the store, export it back, list datasets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphs.ace.__main__ import main
from graphs.ace.playbook.store import PlaybookStore
from librarian_svc.settings import PROJECT_ROOT, load_settings
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
        (["export", "--dataset", "AppWorld"], "case-sensitive, and 'appworld' is the configured one"),
        (["import", str(ONLINE), "--dataset", "APPWORLD"], "case-sensitive, and 'appworld' is the configured one"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main([*argv, "--data-dir", str(tmp_path)]) == 1
    assert message in capsys.readouterr().err


# --- hazards (issue 13, item 9) -------------------------------------------------------------------------------

SMALL = "## STRATEGIES AND HARD RULES\n[shr-00001] Read the task twice.\n[shr-00002] Log in first.\n"


@pytest.mark.parametrize(
    "content",
    [b"", b"\n\n", b"\xef\xbb\xbf", b"## STRATEGIES AND HARD RULES\n", b"## STRATEGIES AND HARD RULES\r\n\r\n"],
    ids=["empty", "blank-lines", "bom-only", "headings-only", "crlf-headings-only"],
)
def test_an_import_without_bullets_never_empties_the_stored_playbook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    store = PlaybookStore(tmp_path / "store")
    source = tmp_path / "p.txt"
    source.write_text(SMALL, encoding="utf-8")
    assert main(["import", str(source), "--data-dir", str(store.data_dir)]) == 0
    source.write_bytes(content)
    capsys.readouterr()
    assert main(["import", str(source), "--data-dir", str(store.data_dir)]) == 1
    assert "no bullets" in capsys.readouterr().err
    assert len(store.load("appworld").bullets) == 2  # untouched
    assert main(["import", str(source), "--allow-empty", "--data-dir", str(store.data_dir)]) == 0
    assert store.load("appworld").bullets == []
    assert store.load("appworld").metadata.last_bullet_number == 2  # ids 1 and 2 are still never reissued


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_windows_line_endings_do_not_reach_the_bullets(tmp_path: Path, newline: str) -> None:
    source = tmp_path / "p.txt"
    source.write_bytes(read_text(ONLINE).replace("\n", newline).encode("utf-8"))
    assert main(["import", str(source), "--data-dir", str(tmp_path)]) == 0
    stored = PlaybookStore(tmp_path).load("appworld")
    assert len(stored.bullets) == 359
    assert not [b.id for b in stored.bullets if "\r" in b.content]


def test_exporting_a_dataset_that_is_not_stored_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--dataset", "nosuch", "--data-dir", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "'nosuch' has no stored playbook" in captured.err


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "p.txt"
    source.write_bytes("## 戦略\n[s-00001] 残高を確認する\n".encode("shift_jis"))
    assert main(["import", str(source), "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "not UTF-8" in err
    assert len(err.strip().splitlines()) == 1


def test_a_stored_case_variant_name_is_exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(ONLINE), "--dataset", "appworld", "--data-dir", str(tmp_path)]) == 0
    (tmp_path / "AppWorld.json").write_bytes((tmp_path / "appworld.json").read_bytes())  # stored before the check
    capsys.readouterr()
    assert main(["export", "--dataset", "AppWorld", "--data-dir", str(tmp_path)]) == 0
    assert "## STRATEGIES AND HARD RULES" in capsys.readouterr().out


# --- PLAYBOOK_DATA_DIR and CONFIG_DIR, read as the service reads them ------------------------------------------


def test_the_directories_from_the_environment_are_read_as_the_service_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `os.environ.get`, a trailing blank made another directory than the service's."""
    monkeypatch.setenv("PLAYBOOK_DATA_DIR", f"  {tmp_path / 'playbooks'} ")
    monkeypatch.setenv("CONFIG_DIR", f"{PROJECT_ROOT / 'config'}\t")
    assert main(["import", str(ONLINE), "--dataset", "appworld"]) == 0
    assert f"to {tmp_path / 'playbooks' / 'appworld.json'}\n" in capsys.readouterr().out
    assert load_settings(os.environ).playbook_data_dir == tmp_path / "playbooks"  # the service's, the same
    assert sorted(p.name for p in tmp_path.iterdir()) == ["playbooks"]


def test_an_empty_playbook_directory_is_the_default_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    PlaybookStore(tmp_path).save("here", PlaybookStore(tmp_path).load("here"))
    monkeypatch.setenv("PLAYBOOK_DATA_DIR", "")
    assert main(["list"]) == 0
    assert "here" not in capsys.readouterr().out.split()


def test_a_directory_setting_the_service_would_refuse_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PLAYBOOK_DATA_DIR", "/etc/passwd")
    assert main(["list"]) == 1
    assert (
        capsys.readouterr().err
        == "python -m graphs.ace list: PLAYBOOK_DATA_DIR='/etc/passwd' is a file, not a directory\n"
    )


def test_the_command_line_runs_without_the_service_package(tmp_path: Path) -> None:
    """It reads the directories with `graphs.directory_settings`, as the service does, never by importing the service.

    It imported `librarian_svc.settings` inside a function: a cycle (the service imports `graphs.ace`).
    """
    code = (
        "import sys\n"
        "from graphs.ace.__main__ import main\n"
        "status = main(['list'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'librarian_svc'), status)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "PLAYBOOK_DATA_DIR": f" {tmp_path} "}
    env.pop("CONFIG_DIR", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout == "[] 0\n", done.stderr
