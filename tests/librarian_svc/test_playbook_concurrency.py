"""Concurrent writers of one stored playbook lose no lesson and issue no id twice (issue 13, item 8).

Ten `/workflow/run` requests with `save: true` run at once against one real service, and against two
real services that share only PLAYBOOK_DATA_DIR (two instances on one volume): every response's lesson
must be in the final file, under an id no other response got. Unit tests cover the store's lock (it
waits without blocking the event loop and gives up at the deadline) and the id high-water mark.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import Playbook, PlaybookMetadata
from graphs.ace.playbook.store import PlaybookLockTimeout, PlaybookStore
from tests.graphs.ace.helpers import as_json, bullet, playbook
from tests.support.live_service import LiveService

SEED = playbook(
    bullet("shr-00001", "Read the task description twice before calling any API.", section="general"),
    bullet("shr-00002", "Log in with the supervisor's credentials from the profile.", section="general"),
)
LESSONS = [
    ("How many songs can a Spotify queue hold?", "A Spotify queue holds at most 1000 songs"),
    ("東京タワーの高さは？", "333メートル"),
    ("What is the boiling point of water at sea level?", "100 degrees Celsius"),
    ("富士山の標高は？", "3776メートル"),
    ("Which planet has the Great Red Spot?", "Jupiter"),
    ("How long is a Venmo payment request valid?", "Venmo requests expire after 30 days"),
    ("日本の首都はどこ？", "東京"),
    ("Who wrote the novel Moby-Dick?", "Herman Melville"),
    ("How many players are on a soccer team on the field?", "Eleven players per team"),
    ("What gas do plants absorb for photosynthesis?", "Carbon dioxide"),
]


def _body(i: int) -> dict[str, Any]:
    query, truth = LESSONS[i]
    return {"query": query, "ground_truth": truth, "dataset": "shared", "save": True, "request_id": f"w-{i}"}


async def _run_all(base_urls: list[str]) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=60.0) as client:

        async def one(i: int) -> dict[str, Any]:
            response = await client.post(f"{base_urls[i % len(base_urls)]}/workflow/run", json=_body(i))
            assert response.status_code == 200, response.text
            answer: dict[str, Any] = response.json()
            return answer

        return list(await asyncio.gather(*(one(i) for i in range(len(LESSONS)))))


def _assert_no_lesson_lost(answers: list[dict[str, Any]], store: PlaybookStore) -> None:
    added = [d for a in answers for d in a["deltas"] if d["type"] == "ADD"]
    assert all(a["action"] == "COMPLETE" and a["playbook_saved"] for a in answers), answers
    assert len(added) == len(LESSONS)  # one lesson per run, each added (none merged into another)
    ids = [d["bullet_id"] for d in added]
    assert len(set(ids)) == len(ids), f"an id was issued twice: {sorted(ids)}"
    final = store.load("shared")
    stored_ids = [b.id for b in final.bullets]
    assert len(set(stored_ids)) == len(stored_ids)
    by_id = {b.id: b.content for b in final.bullets}
    for delta in added:
        assert by_id.get(delta["bullet_id"]) == delta["content"], f"lesson {delta['bullet_id']} was lost"
    assert len(final.bullets) == len(SEED.bullets) + len(LESSONS)
    assert final.metadata.last_bullet_number == 2 + len(LESSONS)


@pytest.mark.live
def test_concurrent_saves_on_one_service_keep_every_lesson(
    start_live_service: Callable[..., LiveService], tmp_path: Path
) -> None:
    store = PlaybookStore(tmp_path / "playbooks")
    store.save("shared", SEED)
    service = start_live_service({"PLAYBOOK_DATA_DIR": str(store.data_dir)})
    _assert_no_lesson_lost(asyncio.run(_run_all([service.base_url])), store)


@pytest.mark.live
def test_concurrent_saves_on_two_services_sharing_the_directory_keep_every_lesson(
    start_live_service: Callable[..., LiveService], tmp_path: Path
) -> None:
    store = PlaybookStore(tmp_path / "playbooks")
    store.save("shared", SEED)
    env = {"PLAYBOOK_DATA_DIR": str(store.data_dir)}
    first, second = start_live_service(env), start_live_service(env)
    _assert_no_lesson_lost(asyncio.run(_run_all([first.base_url, second.base_url])), store)


# --- the store's lock ------------------------------------------------------------------------------------


def test_updates_in_one_event_loop_serialise(tmp_path: Path) -> None:
    store = PlaybookStore(tmp_path)
    store.save("ds", Playbook())

    async def add_one(i: int) -> None:
        async def change(fresh: Playbook) -> tuple[Playbook, None]:
            await asyncio.sleep(0.001)  # yield inside the critical section: others must still wait
            new = bullet(f"x-{len(fresh.bullets) + 1:05d}", f"lesson {i}")
            return Playbook(metadata=fresh.metadata, bullets=[*fresh.bullets, new]), None

        await store.update("ds", change, deadline=time.monotonic() + 10)

    async def main() -> None:
        await asyncio.gather(*(add_one(i) for i in range(20)))

    asyncio.run(main())
    stored = store.load("ds")
    assert sorted(b.content for b in stored.bullets) == sorted(f"lesson {i}" for i in range(20))
    assert [b.id for b in stored.bullets] == [f"x-{n:05d}" for n in range(1, 21)]


def test_waiting_for_the_lock_keeps_the_loop_running_and_respects_the_deadline(tmp_path: Path) -> None:
    store = PlaybookStore(tmp_path)
    store.save("ds", SEED)
    holder = os.open(store.lock_path("ds"), os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another writer (another process, as far as flock is concerned)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def unchanged(fresh: Playbook) -> tuple[Playbook, None]:
        return fresh, None

    async def main() -> float:
        task = asyncio.create_task(ticker())
        started = time.monotonic()
        with pytest.raises(PlaybookLockTimeout):
            await store.update("ds", unchanged, deadline=time.monotonic() + 0.3)
        task.cancel()
        return time.monotonic() - started

    try:
        waited = asyncio.run(main())
    finally:
        os.close(holder)
    assert 0.3 <= waited < 0.5
    assert ticks >= 15  # the event loop kept serving while the lock was held elsewhere
    assert store.load("ds").bullets == SEED.bullets  # nothing written


def test_the_lock_is_released_when_the_change_fails(tmp_path: Path) -> None:
    store = PlaybookStore(tmp_path)

    async def broken(fresh: Playbook) -> tuple[Playbook, None]:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        asyncio.run(store.update("ds", broken, deadline=time.monotonic() + 1))
    store.save("ds", SEED)  # would wait forever if the lock were still held
    assert len(store.load("ds").bullets) == 2


# --- ids never repeat, whatever the client sends ------------------------------------------------------------


def test_the_stored_high_water_mark_never_goes_down(tmp_path: Path) -> None:
    store = PlaybookStore(tmp_path)
    store.save("ds", playbook(*(bullet(f"general-{n:05d}", f"lesson {n}") for n in range(1, 11))))
    shrunk = store.save("ds", playbook(bullet("general-00001", "lesson 1")))  # re-imported without 2-10
    assert shrunk.metadata.last_bullet_number == 10
    assert store.load("ds").metadata.last_bullet_number == 10


REFLECTION = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "default"}
ADD = {"type": "ADD", "section": "general", "content": "Check the Spotify queue limit before adding songs."}


@pytest.mark.parametrize(
    ("sent", "keep_metadata", "extra", "expected"),
    [
        pytest.param(
            playbook(bullet("general-00001", "a"), bullet("general-00007", "b")),
            False,
            {},
            "general-00008",
            id="metadata-dropped",
        ),
        pytest.param(
            Playbook(metadata=PlaybookMetadata(last_bullet_number=2), bullets=[bullet("general-00009", "b")]),
            True,
            {},
            "general-00010",
            id="metadata-below-the-ids",
        ),
        pytest.param(
            playbook(bullet("api-00003", "a", section="general"), bullet("shr-00012", "b", section="general")),
            False,
            {},
            "general-00013",
            id="mixed-prefixes",
        ),
        pytest.param(
            playbook(bullet("general-00001", "a")),
            False,
            {"trajectory": {"query": "q", "used_bullet_ids": ["general-00001", "general-00005"]}},
            "general-00006",
            id="trajectory-names-a-deleted-bullet",
        ),
    ],
)
def test_curate_never_reissues_an_id_the_request_shows(
    client: TestClient[Litestar], sent: Playbook, keep_metadata: bool, extra: dict[str, Any], expected: str
) -> None:
    body = as_json(sent)
    if not keep_metadata:
        del body["metadata"]  # the client dropped it
    answer = client.post(
        "/agent/ace/curate", json={"reflection": REFLECTION, "playbook": body, "deltas": [ADD], **extra}
    )
    assert answer.status_code == 200, answer.text
    (added,) = [d for d in answer.json()["deltas"] if d["type"] == "ADD"]
    assert added["bullet_id"] == expected
    assert answer.json()["playbook"]["metadata"]["last_bullet_number"] == int(expected.rsplit("-", 1)[1])
