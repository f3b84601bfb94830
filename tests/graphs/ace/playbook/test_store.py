"""PlaybookStore: seed 000 property 3 (save → load round trip), atomic writes, corrupt and missing files, names."""

from __future__ import annotations

import ast
import builtins
import errno
import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings

from contracts.ace import MAX_BULLET_NUMBER, Playbook
from graphs.ace.playbook import store as store_module
from graphs.ace.playbook.ids import high_water
from graphs.ace.playbook.import_export import store_replacing
from graphs.ace.playbook.store import InvalidDatasetName, PlaybookCorrupt, PlaybookStore, PlaybookStoreError
from tests.graphs.ace.helpers import bullet, playbook, real_playbook
from tests.graphs.ace.strategies import playbooks
from tests.support.live_service import PROJECT_ROOT


# Feature: self-reflection-system, Property 3: a saved playbook loads back equal (except updated_at)
@settings(max_examples=100, deadline=None)
@given(playbooks())
def test_saved_playbooks_load_back_equal(original: Playbook) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = PlaybookStore(directory)
        saved = store.save("ds", original)
        loaded = store.load("ds")
    assert loaded == saved
    assert loaded.bullets == original.bullets
    assert loaded.metadata.created_at == original.metadata.created_at
    assert loaded.metadata.last_bullet_number == high_water(original)  # never below an id it holds
    assert loaded.metadata.updated_at >= original.metadata.updated_at


def test_a_missing_playbook_is_empty(tmp_path: Path) -> None:
    assert PlaybookStore(tmp_path / "nowhere").load("appworld").bullets == []


def test_the_real_playbook_survives_the_store(tmp_path: Path) -> None:
    original = real_playbook()
    store = PlaybookStore(tmp_path)
    store.save("appworld", original)
    assert store.load("appworld").bullets == original.bullets
    text = (tmp_path / "appworld.json").read_text(encoding="utf-8")
    assert json.loads(text)["bullets"][0]["confidence_score"] == 0.5  # readable JSON, derived field included


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "malformed"),
        (b'{"bullets": [{"id": "x-1", "section": "s", "content": "c", "helpful": -2}]}', "bullets[0].helpful"),
        (b'{"bullets": "none"}', "bullets"),
        (
            b'{"bullets": [{"id": "x-1", "section": "s", "content": "a"},'
            b' {"id": "x-1", "section": "s", "content": "b"}]}',
            "duplicate",
        ),
        (b"\xff\xfe", ""),
    ],
)
def test_a_corrupt_file_is_a_clear_error(tmp_path: Path, content: bytes, reason: str) -> None:
    (tmp_path / "appworld.json").write_bytes(content)
    with pytest.raises(PlaybookCorrupt) as raised:
        PlaybookStore(tmp_path).load("appworld")
    message = str(raised.value)
    assert "appworld" in message
    assert "corrupt" in message
    assert reason.lower() in message.lower()


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".hidden", "", "a" * 65, "name.json", "-x", "a b", "名前"])
def test_dataset_names_cannot_leave_the_directory(tmp_path: Path, name: str) -> None:
    store = PlaybookStore(tmp_path)
    with pytest.raises(InvalidDatasetName):
        store.load(name)
    with pytest.raises(InvalidDatasetName):
        store.save(name, Playbook())
    assert list(tmp_path.iterdir()) == []


def test_a_crash_during_save_leaves_the_old_playbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = PlaybookStore(tmp_path)
    store.save("ds", playbook(bullet("a-00001", "old")))

    def crash(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(PlaybookStoreError, match="No space left"):
        store.save("ds", playbook(bullet("a-00001", "new")))
    monkeypatch.undo()
    assert [b.content for b in store.load("ds").bullets] == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ds.lock", "ds.json"]  # no temp file left behind


def test_saving_refuses_duplicate_ids(tmp_path: Path) -> None:
    store = PlaybookStore(tmp_path)
    with pytest.raises(PlaybookStoreError, match="duplicate"):
        store.save("ds", playbook(bullet("a-00001", "x"), bullet("a-00001", "y")))
    assert not (tmp_path / "ds.json").exists()


def test_save_is_write_then_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target is only ever replaced by a complete file written and fsynced in the same directory."""
    store = PlaybookStore(tmp_path)
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    def replace(source: str, target: str) -> None:
        events.append("replace")
        assert Path(source).parent == Path(target).parent
        assert msgspec.json.decode(Path(source).read_bytes(), type=Playbook).bullets[0].content == "x"
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    store.save("ds", playbook(bullet("a-00001", "x")))
    assert events == ["fsync", "replace", "fsync"]  # data, rename, directory


PAST_THE_MAXIMUM = {
    "metadata": {"last_bullet_number": MAX_BULLET_NUMBER + 1},
    "bullets": [{"id": "general-1000000000001", "section": "general", "content": "Always paginate."}],
}


@pytest.mark.parametrize(
    ("content", "mark"),
    [
        (json.dumps(PAST_THE_MAXIMUM).encode(), MAX_BULLET_NUMBER),
        (b'{"metadata": {"last_bullet_number": 42}, "bullets": [{"id": "gen-00077"}]}', 77),
        (b"not json", 3),
        (b'{"metadata": {"last_bullet_number": 42}, "bullets": [{"id": 5}, {"id": "gen-00077"}]}', 42),
        (b'{"bullets": [{"id": "a-00001", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}]}", 3),
        (b'{"metadata": {"last_bullet_number": 50, "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}}", 3),
    ],
    ids=[
        "mark-past-the-maximum",
        "bullet-breaks-the-contract",
        "not-json",
        "an-id-that-is-not-a-string-keeps-the-metadata-mark",
        "nested-too-deeply-in-a-bullet",
        "nested-too-deeply-in-the-metadata",
    ],
)
def test_a_corrupt_file_can_be_replaced_and_keeps_what_is_left_of_its_mark(
    tmp_path: Path, content: bytes, mark: int
) -> None:
    store = PlaybookStore(tmp_path)
    store.path_for("hw").write_bytes(content)
    with pytest.raises(PlaybookCorrupt):
        store.load("hw")
    saved = store_replacing(store, "hw", playbook(bullet("gen-00003", "Read the task twice.")))
    assert saved.metadata.last_bullet_number == mark
    assert store.load("hw") == saved


class _StatvfsResult:
    """What `os.statvfs` says of a file system, reduced to its mount flags."""

    def __init__(self, flags: int) -> None:
        self.f_flag = flags


@pytest.mark.parametrize(
    ("where", "read_only_mount", "may_write", "reason"),
    [
        ("existing", False, True, None),
        ("missing/under/it", False, True, None),  # created on the first save, in a directory it may write
        ("existing", False, False, "is not writable by this process"),
        ("missing/under/it", False, False, "is not writable by this process"),
        ("existing", True, True, "is on a read-only file system"),
    ],
)
def test_a_directory_the_store_cannot_write_is_found_before_the_first_save(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    read_only_mount: bool,
    may_write: bool,
    reason: str | None,
) -> None:
    """The service warns at start-up (`services.build_services`); tests run as root, so access is simulated."""
    (tmp_path / "existing").mkdir()
    monkeypatch.setattr(os, "statvfs", lambda path: _StatvfsResult(os.ST_RDONLY if read_only_mount else 0))
    monkeypatch.setattr(os, "access", lambda path, mode: may_write)
    found = PlaybookStore(tmp_path / where).unwritable_reason()
    if reason is None:
        assert found is None
    else:
        assert found is not None
        assert reason in found
        assert str(tmp_path) in found  # the directory it looked at: the one to fix


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (PermissionError(13, "Permission denied"), "the playbook directory is not writable by this process"),
        (OSError(30, "Read-only file system"), "the playbook directory is not writable by this process"),
        (OSError(28, "No space left on device"), "No space left on device"),
    ],
    ids=["permission", "read-only", "disk-full"],
)
def test_a_save_the_directory_refuses_names_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, says: str
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(PlaybookStoreError, match=f"^could not lock playbook 'demo': .*{says}"):
        PlaybookStore(tmp_path / "playbooks").save("demo", playbook(bullet("general-00001", "Read twice.")))


@pytest.fixture(name="umask")
def fixture_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process's umask set to the test's value, and put back (it is process-wide)."""
    mask: int = request.param
    previous = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(previous)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077, 0o000], indirect=True, ids=["022", "002", "077", "000"])
def test_saved_files_have_the_mode_any_new_file_would(tmp_path: Path, umask: int) -> None:
    """`mkstemp` made every playbook 0600, while its lock file followed the umask: another user could lock, not read."""
    store = PlaybookStore(tmp_path / "playbooks")
    store.save("demo", playbook(bullet("general-00001", "Read twice.")))
    store.save("demo", playbook(bullet("general-00001", "Read twice."), bullet("general-00002", "Then act.")))
    plain = tmp_path / "plain"
    plain.write_bytes(b"")  # what the same process gets for a file it creates the usual way
    expected = 0o666 & ~umask
    assert plain.stat().st_mode & 0o777 == expected
    assert store.path_for("demo").stat().st_mode & 0o777 == expected
    assert store.lock_path("demo").stat().st_mode & 0o777 == expected


@pytest.mark.parametrize("umask", [0o022], indirect=True, ids=["022"])
def test_a_save_reads_no_umask_so_a_failed_read_cannot_open_the_file_to_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int
) -> None:
    """The mode came from /proc/self/status, read at save time; when that failed (EMFILE: the temporary file took
    the last descriptor) the fallback was the umask "read at import", 0 wherever /proc was readable then: 0666."""
    real_open = open

    def no_proc(file: object, *args: object, **kwargs: object) -> object:
        if str(file).startswith("/proc"):
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    def no_umask(mask: int) -> int:
        raise AssertionError("a save set the process-wide umask")

    monkeypatch.setattr(builtins, "open", no_proc)
    monkeypatch.setattr(os, "umask", no_umask)
    store = PlaybookStore(tmp_path)
    store.save("demo", playbook(bullet("general-00001", "Read twice.")))
    store.save("demo", playbook(bullet("general-00001", "Read twice."), bullet("general-00002", "Then act.")))
    monkeypatch.undo()
    assert store.path_for("demo").stat().st_mode & 0o777 == 0o644
    assert store.lock_path("demo").stat().st_mode & 0o777 == 0o644


SAVE_UNDER_EACH_UMASK = """
import json, os, sys
os.umask(0o077)  # at import: what a save does must not depend on it
from contracts.ace import Playbook
from graphs.ace.playbook.store import PlaybookStore
modes = {}
for mask in (0o022, 0o002, 0o027, 0o007, 0o000):
    os.umask(mask)
    store = PlaybookStore(os.path.join(sys.argv[1], format(mask, "03o")))
    store.save("demo", Playbook())
    store.save("demo", Playbook())
    modes[format(mask, "03o")] = [
        format(os.stat(p).st_mode & 0o777, "03o") for p in (store.path_for("demo"), store.lock_path("demo"))
    ]
print(json.dumps(modes))
"""


def test_in_a_fresh_process_the_mode_follows_the_umask_at_save_time(tmp_path: Path) -> None:
    """Set in a process of its own, so no other test's files see these umasks."""
    done = subprocess.run(
        [sys.executable, "-c", SAVE_UNDER_EACH_UMASK, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {  # the last line: structlog may print the saves
        "022": ["644", "644"],
        "002": ["664", "664"],
        "027": ["640", "640"],
        "007": ["660", "660"],
        "000": ["666", "666"],
    }


def test_the_store_has_no_umask_code() -> None:
    """The kernel applies the umask to the files the store creates; the store neither reads nor sets it."""
    tree = ast.parse(Path(store_module.__file__).read_text(encoding="utf-8"))
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    strings = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]
    assert [name for name in names if "umask" in name.lower()] == []
    assert [text for text in strings if "/proc" in text] == []
    assert "fchmod" not in names


def test_a_temporary_name_in_use_is_skipped_and_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer's temporary file (or anything under that name) is never opened, let alone renamed."""
    store = PlaybookStore(tmp_path)
    taken = tmp_path / ".demo.taken.tmp"
    taken.write_bytes(b"someone else's")
    names = iter(["taken", "taken", "fresh"])
    monkeypatch.setattr(secrets, "token_hex", lambda _: next(names))
    store.save("demo", playbook(bullet("general-00001", "Read twice.")))
    assert taken.read_bytes() == b"someone else's"
    assert [b.id for b in store.load("demo").bullets] == ["general-00001"]
    assert next(names, None) is None  # two taken names tried, then the fresh one


def test_no_free_temporary_name_is_a_one_line_save_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = PlaybookStore(tmp_path)
    (tmp_path / ".demo.taken.tmp").write_bytes(b"")
    monkeypatch.setattr(secrets, "token_hex", lambda _: "taken")
    with pytest.raises(PlaybookStoreError, match=r"^could not save playbook 'demo': no free temporary name after 100"):
        store.save("demo", playbook(bullet("general-00001", "Read twice.")))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".demo.lock", ".demo.taken.tmp"]
