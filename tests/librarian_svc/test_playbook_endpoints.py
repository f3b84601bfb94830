"""`PUT`/`GET /playbooks/{dataset}` and `GET /playbooks`: the official ACE text over HTTP (issue 13, item 9).

The same checks as the command line: it must parse and fit the dataset's sections, a text without
bullets never empties a stored playbook by accident, line endings do not leak into bullets, a dataset
that is not stored is a 404; and every refusal leaves the stored playbook as it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import MAX_BULLET_NUMBER
from graphs.ace.playbook.store import PlaybookStore
from tests.conftest import AppFactory
from tests.graphs.ace.helpers import ONLINE, read_text

TEXT = {"content-type": "text/plain; charset=utf-8"}
ONLINE_TEXT = read_text(ONLINE)
SMALL = "## STRATEGIES AND HARD RULES\n[shr-00001] Read the task twice.\n[shr-00002] Log in first.\n"


@pytest.fixture(name="store_client")
def fixture_store_client(make_app: AppFactory, tmp_path: Path) -> Iterator[tuple[TestClient[Litestar], PlaybookStore]]:
    store = PlaybookStore(tmp_path)
    with TestClient(app=make_app({"PLAYBOOK_DATA_DIR": str(tmp_path)}), raise_server_exceptions=False) as client:
        yield client, store


def non_blank(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize(
    ("prefix", "newline"), [("", "\n"), ("", "\r\n"), ("\ufeff", "\r\n"), ("", "\r")], ids=["lf", "crlf", "bom", "cr"]
)
def test_an_official_playbook_goes_in_and_comes_back_out(
    store_client: tuple[TestClient[Litestar], PlaybookStore], prefix: str, newline: str
) -> None:
    client, store = store_client
    body = (prefix + ONLINE_TEXT.replace("\n", newline)).encode("utf-8")
    stored = client.put("/playbooks/appworld", content=body, headers={**TEXT, "X-Request-ID": "imp-1"})
    assert stored.status_code == 200, stored.text
    answer = stored.json()
    assert answer["action"] == "STORED"
    assert answer["request_id"] == "imp-1"
    assert (answer["dataset"], answer["bullets"], answer["last_bullet_number"]) == ("appworld", 359, 359)
    assert answer["sections"][0] == "strategies_and_hard_rules"
    assert answer["replaced"] is False
    assert not [b.id for b in store.load("appworld").bullets if "\r" in b.content or "\ufeff" in b.content]
    exported = client.get("/playbooks/appworld")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("text/plain")
    assert non_blank(exported.text) == non_blank(ONLINE_TEXT)  # every heading and bullet line, byte for byte
    assert client.get("/playbooks").json()["datasets"] == ["appworld"]
    run = client.post("/workflow/run", json={"query": "How do I get all items from a paginated API?"})
    assert run.json()["search_results_count"] == 10  # /workflow/run reads what was imported


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "where", "message"),
    [
        pytest.param("/playbooks/appworld", b"", TEXT, 400, "$", "no bullets", id="empty"),
        pytest.param("/playbooks/appworld", b"\r\n\r\n", TEXT, 400, "$", "no bullets", id="blank-lines"),
        pytest.param(
            "/playbooks/appworld", b"## STRATEGIES AND HARD RULES\n", TEXT, 400, "$", "no bullets", id="headings-only"
        ),
        pytest.param(
            "/playbooks/appworld",
            b"## MADE UP\n[x-00001] y\n",
            TEXT,
            400,
            "$.bullets[0].section",
            "line 2: unknown section 'made_up'",
            id="unknown-section",
        ),
        pytest.param(
            "/playbooks/appworld", b"## STRATEGIES\nnot a bullet\n", TEXT, 400, "$", "line 2: expected", id="malformed"
        ),
        pytest.param(
            "/playbooks/appworld",
            "## OTHERS\n[misc-00001] fine\n[misc-00002]    \n[misc-00003] \u200b\n".encode(),
            TEXT,
            400,
            "$.bullets[1].content",
            "line 3: bullet 'misc-00002' has no visible content",
            id="blank-content",
        ),
        pytest.param(
            "/playbooks/appworld",
            b"## S\n[a-00001] x\n[a-00001] y\n",
            TEXT,
            400,
            "$",
            "repeats line 2",
            id="repeated-id",
        ),
        pytest.param(
            "/playbooks/appworld",
            b"## S\n[a-00001] helpful=-1 harmful=0 :: x\n",
            TEXT,
            400,
            "$",
            "line 2: bullet 'a-00001' starts like vote counters",
            id="malformed-votes",
        ),
        pytest.param(
            "/playbooks/appworld",
            "## 戦略\n[s-00001] 確認\n".encode("shift_jis"),
            TEXT,
            400,
            "$",
            "UTF-8",
            id="shift-jis",
        ),
        pytest.param(
            "/playbooks/appworld",
            SMALL.encode(),
            {"content-type": "application/json"},
            415,
            "$",
            "text/plain",
            id="json-content-type",
        ),
        pytest.param("/playbooks/appworld", SMALL.encode(), {}, 415, "$", "text/plain", id="no-content-type"),
        pytest.param(
            "/playbooks/appworld",
            SMALL.encode("utf-16"),
            {"content-type": "text/plain; charset=utf-16"},
            415,
            "$",
            "UTF-8",
            id="other-charset",
        ),
        pytest.param("/playbooks/app.world", SMALL.encode(), TEXT, 422, "$.dataset", "regex", id="bad-dataset-name"),
        pytest.param("/playbooks/AppWorld", SMALL.encode(), TEXT, 422, "$.dataset", "case", id="miscased-dataset"),
        pytest.param(
            "/playbooks/appworld?text=IGNORED", SMALL.encode(), TEXT, 422, "$.text", "request body", id="text-in-query"
        ),
        pytest.param(
            "/playbooks/appworld",
            SMALL.encode(),
            {"content-type": "text/plain; charset=utf-8; charset=latin-1"},
            400,
            "$",
            "more than one charset",
            id="two-charsets",
        ),
        pytest.param(
            "/playbooks/appworld?bogus=1", SMALL.encode(), TEXT, 422, "$.bogus", "unknown", id="unknown-query"
        ),
        pytest.param(
            "/playbooks/appworld?allow_empty=maybe", b"", TEXT, 422, "$.allow_empty", "bool", id="not-a-boolean"
        ),
        pytest.param(
            "/playbooks/appworld?allow_empty=true&allow_empty=true",
            b"",
            TEXT,
            422,
            "$.allow_empty",
            "more than once",
            id="repeated-parameter",
        ),
    ],
)
def test_a_refused_import_is_a_structured_4xx_and_changes_nothing(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
    path: str,
    body: bytes,
    headers: dict[str, str],
    status: int,
    where: str,
    message: str,
) -> None:
    client, store = store_client
    assert client.put("/playbooks/appworld", content=SMALL.encode(), headers=TEXT).status_code == 200
    before = store.path_for("appworld").read_bytes()
    response = client.put(path, content=body, headers={**headers, "X-Request-ID": "bad-import"})
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    assert (answer["action"], answer["error_type"], answer["request_id"]) == ("ERROR", "INVALID_INPUT", "bad-import")
    assert where in [d["path"] for d in answer["details"]]
    assert message in answer["message"]
    assert store.path_for("appworld").read_bytes() == before


def test_an_empty_import_is_stored_only_when_asked_and_ids_stay_retired(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    client, store = store_client
    client.put("/playbooks/appworld", content=ONLINE_TEXT.encode(), headers=TEXT)
    emptied = client.put("/playbooks/appworld?allow_empty=true", content=b"", headers=TEXT)
    assert emptied.status_code == 200, emptied.text
    assert (emptied.json()["bullets"], emptied.json()["replaced"]) == (0, True)
    assert emptied.json()["last_bullet_number"] == 359  # the ids of the dropped bullets are never issued again
    assert store.load("appworld").bullets == []


def test_a_smaller_reimport_keeps_the_high_water_mark_for_the_next_lesson(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    client, _ = store_client
    client.put("/playbooks/appworld", content=ONLINE_TEXT.encode(), headers=TEXT)
    answer = client.put("/playbooks/appworld", content=SMALL.encode(), headers=TEXT).json()
    assert (answer["bullets"], answer["last_bullet_number"], answer["replaced"]) == (2, 359, True)
    body = {"query": "How many songs can a Spotify queue hold?", "ground_truth": "At most 1000 songs", "save": True}
    learned = client.post("/workflow/run", json=body).json()
    (added,) = [d for d in learned["deltas"] if d["type"] == "ADD"]
    assert added["bullet_id"].endswith("-00360")


def test_exporting_what_is_not_stored_is_404_and_a_corrupt_file_is_500(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    client, store = store_client
    miscased = client.get("/playbooks/AppWorld")  # not a 404 that hides the configured 'appworld'
    assert miscased.status_code == 422
    assert "'appworld' is the configured one" in miscased.json()["details"][0]["message"]
    missing = client.get("/playbooks/nosuch")
    assert missing.status_code == 404
    assert missing.json()["details"][0]["path"] == "$.dataset"
    assert "'nosuch' has no stored playbook" in missing.json()["message"]
    store.data_dir.mkdir(parents=True, exist_ok=True)
    store.path_for("broken").write_text('{"bullets": [{"id": 1}]}', encoding="utf-8")
    corrupt = client.get("/playbooks/broken")
    assert corrupt.status_code == 500
    assert (corrupt.json()["error_type"], "corrupt" in corrupt.json()["message"]) == ("OTHER", True)
    assert client.get("/playbooks").json()["datasets"] == ["broken"]


def test_the_list_is_empty_before_anything_is_stored(store_client: tuple[TestClient[Litestar], PlaybookStore]) -> None:
    client, _ = store_client
    answer = client.get("/playbooks").json()
    assert (answer["action"], answer["datasets"]) == ("PLAYBOOKS", [])
    assert client.get("/playbooks?x=1").status_code == 422


def test_a_corrupt_stored_playbook_is_repaired_by_a_replacing_put(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    client, store = store_client
    store.data_dir.mkdir(parents=True, exist_ok=True)
    past = {"metadata": {"last_bullet_number": MAX_BULLET_NUMBER + 1}, "bullets": []}
    store.path_for("hw").write_text(json.dumps(past), encoding="utf-8")
    assert client.get("/playbooks/hw").status_code == 500
    stored = client.put("/playbooks/hw", content=SMALL, headers=TEXT)
    assert stored.status_code == 200, stored.text
    assert (stored.json()["replaced"], stored.json()["last_bullet_number"]) == (True, MAX_BULLET_NUMBER)
    assert non_blank(client.get("/playbooks/hw").text) == non_blank(SMALL)


def test_a_playbook_stored_under_a_case_variant_name_stays_usable(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    """Stored before names were checked (`AppWorld` beside `appworld`): read, replaced and run, never locked out."""
    client, store = store_client
    assert client.put("/playbooks/appworld", content=SMALL.encode(), headers=TEXT).status_code == 200
    store.data_dir.joinpath("AppWorld.json").write_bytes(store.path_for("appworld").read_bytes())
    assert client.get("/playbooks/AppWorld").status_code == 200
    assert client.put("/playbooks/AppWorld", content=SMALL.encode(), headers=TEXT).json()["replaced"] is True
    run = client.post("/workflow/run", json={"query": "How do I log in?", "dataset": "AppWorld"})
    assert run.status_code == 200, run.text
    assert client.get("/playbooks/APPWORLD").status_code == 422  # neither stored nor configured: refused


def test_a_playbook_directory_the_service_cannot_write_is_a_warning_at_start_up_and_a_named_500_on_save(
    make_app: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found at the first write before: a bare "could not lock playbook 'demo': Permission denied"."""
    read_only = tmp_path / "playbooks"
    read_only.mkdir()
    PlaybookStore(read_only).save("demo", PlaybookStore(read_only).load("demo"))  # stored while it was writable
    real_open = os.open

    def as_another_user(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kwargs: object) -> int:
        if str(path).startswith(str(read_only)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # the tests run as root: simulated
    with TestClient(app=make_app({"PLAYBOOK_DATA_DIR": str(read_only)}), raise_server_exceptions=False) as client:
        warned = capsys.readouterr().out
        assert "PLAYBOOK_DATA_DIR is not writable" in warned
        assert str(read_only) in warned
        monkeypatch.setattr(os, "open", as_another_user)
        assert client.get("/playbooks/demo").status_code == 200  # reading works
        refused = client.put("/playbooks/demo", content=SMALL, headers=TEXT)
    assert refused.status_code == 500
    body = refused.json()
    assert body["error_type"] == "OTHER"
    assert body["message"] == (
        "could not lock playbook 'demo': the playbook directory is not writable by this process (Permission denied)"
    )
