"""Several worker processes (`WEB_CONCURRENCY`), started as Cloud Run starts the image: `python -m librarian_svc`.

Each worker builds the app itself (the collector paused, the start-up heap frozen), answers `/ready`,
and accepts the others' state tokens, also when no signing key is configured: the supervisor makes one
ephemeral key for the whole instance. A worker that dies is replaced. The workers are forked from a fork
server that imported the service and the configured model provider's SDK, and each asks the model on its
own. Shutdown with several workers is in test_shutdown.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.proc_stats import children, cmdline, role, tree, worker_pids
from librarian_svc.startup_gc import SERVING_THRESHOLDS
from tests.fakes.fixtures import fake_llm_env
from tests.fakes.llm_server import FakeLLMServer, Reply, request_text
from tests.support.held_worker_service import ALLOWANCE_ENV, HOLD_ENV
from tests.support.live_service import LiveService
from tests.support.proc_sockets import listening_sockets, sockets_held

pytestmark = [pytest.mark.live, pytest.mark.slow]

READY_TIMEOUT_S = 90.0
BURST = 24
"""Connections opened at once: all of them on one of two workers' sockets has probability 2^-23."""


def stopped_cleanly(service: LiveService) -> bool:
    """SIGTERM: status 0, and no worker took the shutdown for its supervisor's death."""
    status = service.stop()
    gone = [line for line in log_lines(service) if line.get("message") == "the supervisor is gone: stopping"]
    return status == 0 and not gone


def log_lines(service: LiveService) -> list[dict[str, Any]]:
    return [json.loads(line) for line in service.logs().splitlines() if line.startswith("{")]


def ready_workers(service: LiveService) -> dict[int, dict[str, Any]]:
    return {line["pid"]: line for line in log_lines(service) if line.get("message") == "worker ready"}


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def fresh_connection_post(url: str, body: dict[str, Any]) -> httpx.Response:
    """One request on its own connection, so the kernel picks a worker for it anew."""
    with httpx.Client(timeout=15.0) as client:
        return client.post(url, json=body, headers={"Connection": "close"})


HITS = [
    {
        "document_id": f"doc-{i}",
        "page": 1,
        "chunk_id": f"doc-{i}#0",
        "snippet": f"富士山の標高は3776メートルである。資料 {i}。",
        "score": 1.0 - i / 10,
    }
    for i in range(5)
]


def test_two_workers_each_build_with_the_collector_paused_and_share_state_tokens(
    start_live_service: Callable[..., LiveService],
) -> None:
    service = start_live_service(
        {"WEB_CONCURRENCY": "2", "STATE_SIGNING_KEYS": ""},  # no key: the instance's ephemeral one
        ready_timeout=READY_TIMEOUT_S,
    )
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    for worker in ready_workers(service).values():
        assert worker["pid"] != service.process.pid
        assert worker["gc_enabled"] is True
        assert worker["gc_collections_during_start_up"] == 0
        assert worker["gc_frozen"] > 50_000  # the app and its graphs, not a bare interpreter
        assert worker["gc_threshold"] == list(SERVING_THRESHOLDS)
        assert worker["malloc_thresholds_fixed"] is True

    url = f"{service.base_url}/agent/grace/step"
    first = fresh_connection_post(url, {"request_id": "workers-0", "query": "富士山の標高は?"}).json()
    assert first["action"] == "SEARCH", first
    replay = {"state": first["state"], "tool_result": {"step_id": first["step_id"], "hits": HITS}}
    served_by: set[int] = set()
    for index in range(40):
        response = fresh_connection_post(url, {"request_id": f"workers-{index + 1}", **replay})
        assert response.status_code == 200, response.text
        assert response.json()["action"] != "ERROR", response.json()  # the token verified, whichever worker
        time.sleep(0.02)
        served_by = {
            line["pid"] for line in log_lines(service) if line.get("path") == "/agent/grace/step" and "pid" in line
        }
        if len(served_by) == 2 and index >= 10:
            break
    assert served_by == set(ready_workers(service)), "both workers must have served (and verified) a step"
    warnings = [line for line in log_lines(service) if line.get("state_keys") == "ephemeral"]
    assert len(warnings) == 1  # said once, by the supervisor, not by each worker


def served_by_burst(service: LiveService, count: int = BURST, timeout: float = 15.0) -> set[int]:
    """The workers that served `count` requests, each on a connection of its own, all opened at once.

    A client opening its pool, or Cloud Run's front end scaling up, opens its connections so: with one
    socket shared by the workers, the first worker to wake could accept them all.
    """
    before = len(log_lines(service))
    opened = threading.Barrier(count)

    def one(_: int) -> int:
        with httpx.Client(timeout=timeout) as client:
            opened.wait(timeout=15.0)
            return client.get(f"{service.base_url}/health", headers={"Connection": "close"}).status_code

    with ThreadPoolExecutor(count) as pool:
        assert set(pool.map(one, range(count))) == {200}

    def burst_lines() -> list[dict[str, Any]]:
        return [line for line in log_lines(service)[before:] if line.get("path") == "/health"]

    assert wait_until(lambda: len(burst_lines()) >= count, 10.0), service.logs()
    return {line["pid"] for line in burst_lines()}


def test_each_worker_listens_on_a_socket_of_its_own_and_a_burst_of_connections_reaches_them_all(
    start_live_service: Callable[..., LiveService],
) -> None:
    """One SO_REUSEPORT socket per worker (`worker_sockets`): the kernel spreads connections, not the first to wake."""
    service = start_live_service({"WEB_CONCURRENCY": "2"}, ready_timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    listening = listening_sockets(service.port)
    assert len(listening) == 2, listening
    own = {pid: sockets_held(pid) & listening for pid in ready_workers(service)}
    assert sorted(len(inodes) for inodes in own.values()) == [1, 1], own
    assert set.union(*own.values()) == listening  # one each, not the same one
    assert sockets_held(service.process.pid) & listening == listening  # kept for the workers' replacements
    assert served_by_burst(service) == set(own)

    # uvicorn would restart, add or retire workers on every socket at once: the instance keeps its own.
    for signal_number in (signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU):
        os.kill(service.process.pid, signal_number)

    def ignored() -> list[str]:
        return [line["signal"] for line in log_lines(service) if str(line.get("message")).startswith("signal ignored")]

    assert wait_until(lambda: len(ignored()) == 3, 10.0), service.logs()
    assert sorted(ignored()) == ["SIGHUP", "SIGTTIN", "SIGTTOU"]
    assert set(ready_workers(service)) == set(own)
    assert listening_sockets(service.port) == listening
    assert {pid: sockets_held(pid) & listening for pid in own} == own
    assert served_by_burst(service) == set(own)
    assert stopped_cleanly(service)


def test_the_workers_are_forked_from_a_fork_server_that_loaded_the_service(
    start_live_service: Callable[..., LiveService],
) -> None:
    """Not spawned (each importing everything itself): forked from one process that imported the modules once."""
    service = start_live_service({"WEB_CONCURRENCY": "2"}, ready_timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    servers = [pid for pid in children(service.process.pid) if role(pid) == "fork_server"]
    assert len(servers) == 1, [cmdline(pid) for pid in children(service.process.pid)]
    assert sorted(children(servers[0])) == sorted(ready_workers(service)) == sorted(worker_pids(service.process.pid))
    loaded = Path(f"/proc/{servers[0]}/maps").read_text()
    assert "msgspec" in loaded  # the service's native modules, loaded before any fork
    assert "uvloop" in loaded
    assert stopped_cleanly(service)


def running(pid: int) -> bool:
    """The process exists and has not exited (a zombie waiting for its reaper has)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def fork_servers(service: LiveService) -> list[int]:
    return [pid for pid in children(service.process.pid) if role(pid) == "fork_server"]


def test_a_killed_fork_server_is_replaced_and_its_workers_are_drained_and_reaped_by_the_supervisor(
    start_live_service: Callable[..., LiveService],
) -> None:
    """The OOM killer may pick the fork server, and the workers' exit status goes with it (it reports them).

    The supervisor then reads status 255 for each, and starts successors from a new fork server. The old
    workers, orphaned, become the supervisor's children (it is their subreaper): it tells each to drain,
    and reaps it, instead of leaving it to serve on beside its successor, or a zombie once it exits.
    """
    service = start_live_service({"WEB_CONCURRENCY": "2"}, ready_timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    (fork_server,) = fork_servers(service)
    old = set(ready_workers(service))
    os.kill(fork_server, signal.SIGKILL)

    assert wait_until(lambda: len(ready_workers(service)) == 4, READY_TIMEOUT_S), service.logs()
    assert wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in old), 15.0), service.logs()
    new = set(ready_workers(service)) - old
    (successor,) = fork_servers(service)
    assert successor != fork_server
    assert set(children(successor)) == new
    assert httpx.get(f"{service.base_url}/ready", timeout=5.0).status_code == 200
    assert served_by_burst(service) == new
    lines = log_lines(service)
    died = [line["pid"] for line in lines if line.get("message") == "a worker died: starting another"]
    assert sorted(died) == sorted(old)
    told = [line["pid"] for line in lines if line.get("message") == "a worker outlived its fork server: draining it"]
    assert sorted(told) == sorted(old)
    reaped = {line["pid"]: line["exit_status"] for line in lines if line.get("message") == "an orphaned worker exited"}
    # drained, then waited for by the supervisor; uvicorn ends a server it drained on SIGTERM by raising SIGTERM again
    assert reaped == dict.fromkeys(old, -signal.SIGTERM)
    assert service.stop() == 0
    gone = [line for line in log_lines(service) if line.get("message") == "the supervisor is gone: stopping"]
    assert gone == []  # each old worker was told to drain; none took a closed pipe for its supervisor's death


def model_plans_the_search(body: dict[str, Any]) -> Reply:
    """The Librarian's model, OpenAI or Gemini shaped: no candidate yet, so two queries of its own."""
    assert "queries_text" in request_text(body), request_text(body)[:500]
    decision = {
        "sufficient": False,
        "rationale": "nothing found yet",
        "coverage_notes": "",
        "queries_text": ["梅雨 時期 地域"],
        "queries_vector": ["梅雨が見られない地域はどこですか"],
    }
    return Reply(content=json.dumps(decision, ensure_ascii=False), usage=(400, 60))


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_every_worker_asks_the_model_with_the_sdk_its_fork_server_preloaded(
    provider: str, llm_server: FakeLLMServer, start_live_service: Callable[..., LiveService]
) -> None:
    """The workers are forked after the fork server imported the configured provider's SDK (`worker_preload`).

    Whatever those modules set up at import (SSL contexts, connectors, registries) is a copy in each worker:
    each must still reach the model on its own connections. `gemini` is `cloudrun.yaml`'s provider; the
    OpenAI family is `openai-compatible` here.
    """
    llm_server.responder = model_plans_the_search
    service = start_live_service(
        fake_llm_env(llm_server, provider, WEB_CONCURRENCY="2", LLM_TIMEOUT_MS="10000"), ready_timeout=READY_TIMEOUT_S
    )
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    (fork_server,) = [pid for pid in children(service.process.pid) if role(pid) == "fork_server"]
    assert "/aiohttp/" in Path(f"/proc/{fork_server}/maps").read_text()  # the SDK's transport, before any fork
    opened = threading.Barrier(BURST)

    def one_step(index: int) -> dict[str, Any]:
        body = {"request_id": f"model-{index}", "user_query": "日本で梅雨がないのは北海道とどこか。", "subject_id": "s"}
        with httpx.Client(timeout=30.0) as client:
            opened.wait(timeout=15.0)
            response = client.post(
                f"{service.base_url}/agent/librarian/think", json=body, headers={"Connection": "close"}
            )
        assert response.status_code == 200, response.text
        return dict(response.json())

    with ThreadPoolExecutor(BURST) as pool:
        answers = list(pool.map(one_step, range(BURST)))
    for answer in answers:
        assert answer["action"] == "SEARCH", answer
        assert answer["queries_text"] == ["梅雨 時期 地域"], answer  # the model's, not the rules'
        assert answer["usage"]["llm_calls"] == 1, answer
    assert len(llm_server.chat_requests) == BURST
    served_by = {line["pid"] for line in log_lines(service) if line.get("path") == "/agent/librarian/think"}
    assert served_by == set(ready_workers(service)), "both workers must have asked the model"
    assert stopped_cleanly(service)


def test_a_worker_that_dies_is_replaced_on_its_socket(start_live_service: Callable[..., LiveService]) -> None:
    """The replacement listens where the dead worker did, so the connections the kernel sends there are served."""
    service = start_live_service({"WEB_CONCURRENCY": "2"}, ready_timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    listening = listening_sockets(service.port)
    first_two = set(ready_workers(service))
    victim = min(first_two)
    its_socket = sockets_held(victim) & listening
    os.kill(victim, signal.SIGKILL)
    # At once: the connections the kernel queues on the dead worker's socket wait for its successor.
    served = served_by_burst(service, timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 3, READY_TIMEOUT_S), service.logs()
    assert httpx.get(f"{service.base_url}/ready", timeout=5.0).status_code == 200
    assert any(line.get("message") == "a worker died: starting another" for line in log_lines(service))
    (replacement,) = set(ready_workers(service)) - first_two
    assert listening_sockets(service.port) == listening
    assert sockets_held(replacement) & listening == its_socket
    assert served == {replacement, *(first_two - {victim})}  # nothing lost: half of them waited for it
    assert replacement in served_by_burst(service)
    assert stopped_cleanly(service)


def workers_ready(service: LiveService, count: int) -> bool:
    return len(ready_workers(service)) == count


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_replacing_workers_leaves_the_supervisor_no_more_descriptors_than_before(
    start_live_service: Callable[..., LiveService],
) -> None:
    """A crash loop must not make the supervisor run out of descriptors: each replaced worker's are closed at once.

    The process object and its target form a cycle, so they were closed only by a cyclic collection, which the
    supervisor's few allocations rarely bring: two descriptors stayed open per replacement.
    """
    service = start_live_service({"WEB_CONCURRENCY": "2"}, ready_timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    supervisor = service.process.pid
    before = descriptors(supervisor)
    for replaced in range(1, 7):
        os.kill(max(pid for pid in ready_workers(service) if running(pid)), signal.SIGKILL)
        assert wait_until(partial(workers_ready, service, 2 + replaced), READY_TIMEOUT_S), service.logs()
    assert wait_until(lambda: descriptors(supervisor) == before, 5.0), (before, descriptors(supervisor))
    assert stopped_cleanly(service)


HUNG_AFTER_S = 4
START_ALLOWANCE_S = 15
"""Ample for a worker to start on a loaded machine, short enough to wait for one that never does."""


def test_a_worker_whose_event_loop_is_stuck_is_replaced_on_its_socket(
    start_live_service: Callable[..., LiveService],
) -> None:
    """The health answer comes from the worker's event loop (`worker_process`): a loop stuck past the limit is a hang.

    With uvicorn's answer from a thread the stuck worker lived on, and the kernel kept giving it its share
    of new connections. A stall shorter than `WORKER_HUNG_AFTER_S` is not a hang.
    """
    service = start_live_service(
        {"WEB_CONCURRENCY": "2", "WORKER_HUNG_AFTER_S": str(HUNG_AFTER_S)},
        module="tests.support.spin_service",
        ready_timeout=READY_TIMEOUT_S,
    )
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    listening = listening_sockets(service.port)
    own = {pid: sockets_held(pid) & listening for pid in ready_workers(service)}

    short = fresh_connection_post(f"{service.base_url}/test/spin?check=false&seconds=1", {})
    assert short.status_code == 200, short.text
    assert short.json()["stopped"] == "done"

    started = time.monotonic()
    with pytest.raises(httpx.TransportError):  # the worker is killed with the request it was stuck in
        fresh_connection_post(f"{service.base_url}/test/spin?check=false&seconds=60", {})
    assert time.monotonic() - started < HUNG_AFTER_S + 8  # not the 15 s read timeout, nor the 60 s spin

    def replaced() -> list[int]:
        return [
            line["pid"]
            for line in log_lines(service)
            if line.get("message") == "a worker stopped answering: replacing it"
        ]

    assert len(replaced()) == 1, service.logs()  # the short stall did not count
    (stuck,) = replaced()
    assert wait_until(lambda: len(ready_workers(service)) == 3, READY_TIMEOUT_S), service.logs()
    (replacement,) = set(ready_workers(service)) - set(own)
    assert sockets_held(replacement) & listening == own[stuck]
    assert served_by_burst(service) == {replacement, *(set(own) - {stuck})}
    assert stopped_cleanly(service)


def test_the_instance_is_ready_only_once_every_worker_serves(
    start_live_service: Callable[..., LiveService], tmp_path: Path
) -> None:
    """Traffic let in while one worker serves would keep its connections there: /ready waits for them all."""
    hold = tmp_path / "held"
    hold.mkdir()
    (hold / "hold").touch()
    service = start_live_service(
        {"WEB_CONCURRENCY": "2", HOLD_ENV: str(hold)},
        module="tests.support.held_worker_service",
        ready_timeout=READY_TIMEOUT_S,
        wait_for="/health",  # the first worker serves; the second is held before it builds
    )
    assert wait_until(lambda: len(ready_workers(service)) == 1, READY_TIMEOUT_S), service.logs()
    for _ in range(10):
        answer = httpx.get(f"{service.base_url}/ready", timeout=5.0)
        assert answer.status_code == 503, answer.text
        assert answer.json()["status"] == "not_ready"
        time.sleep(0.1)
    assert len(ready_workers(service)) == 1  # still held: the 503s were about the second worker

    (hold / "hold").unlink()
    became_ready = lambda: httpx.get(f"{service.base_url}/ready", timeout=5.0).status_code == 200  # noqa: E731
    assert wait_until(became_ready, READY_TIMEOUT_S), service.logs()
    assert len(ready_workers(service)) == 2
    assert any(line.get("message") == "every worker serves: the instance is ready" for line in log_lines(service))
    assert stopped_cleanly(service)


@pytest.mark.parametrize("held", ["later_workers", "every_worker"])
def test_a_worker_that_never_starts_serving_is_replaced(
    start_live_service: Callable[..., LiveService], tmp_path: Path, held: str
) -> None:
    """A start that hangs (here: held before it builds its app) answers "not yet" for ever: it is replaced in time.

    The first worker too: the supervisor waits for it alone before it starts the others.
    """
    hold = tmp_path / "held"
    hold.mkdir()
    (hold / "hold").touch()
    if held == "every_worker":
        (hold / "first").touch()  # the first worker to start is not the one that builds at once
    service = start_live_service(
        {"WEB_CONCURRENCY": "2", HOLD_ENV: str(hold), ALLOWANCE_ENV: str(START_ALLOWANCE_S)},
        module="tests.support.held_worker_service",
        wait_for="/health" if held == "later_workers" else None,
        ready_timeout=READY_TIMEOUT_S,
    )

    def not_serving() -> list[int]:
        message = "a worker did not start serving in time: replacing it"
        return [line["pid"] for line in log_lines(service) if line.get("message") == message]

    assert wait_until(lambda: len(not_serving()) >= 1, READY_TIMEOUT_S), service.logs()
    (hold / "hold").unlink()
    became_ready = lambda: httpx.get(f"{service.base_url}/ready", timeout=5.0).status_code == 200  # noqa: E731
    assert wait_until(became_ready, READY_TIMEOUT_S), service.logs()
    assert not set(not_serving()) & set(ready_workers(service))  # none of the replaced ones ever served
    assert len(ready_workers(service)) == 2
    assert stopped_cleanly(service)


def test_the_workers_stop_when_their_supervisor_dies_and_the_port_can_be_served_again(
    start_live_service: Callable[..., LiveService],
) -> None:
    """uvicorn's workers served on as orphans, holding the port: a new start failed with "address in use"."""
    service = start_live_service({"WEB_CONCURRENCY": "2"}, ready_timeout=READY_TIMEOUT_S)
    assert wait_until(lambda: len(ready_workers(service)) == 2, READY_TIMEOUT_S), service.logs()
    workers = set(ready_workers(service))
    family = set(tree(service.process.pid)) - {service.process.pid}  # the workers, the fork server, the tracker
    assert workers < family
    service.process.kill()
    service.process.wait()
    try:
        assert wait_until(lambda: not any(running(pid) for pid in family), 30.0), service.logs()
    finally:
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    stopping = [line["pid"] for line in log_lines(service) if line.get("message") == "the supervisor is gone: stopping"]
    assert sorted(stopping) == sorted(workers)
    again = start_live_service({"WEB_CONCURRENCY": "2"}, port=service.port, ready_timeout=READY_TIMEOUT_S)
    assert httpx.get(f"{again.base_url}/ready", timeout=5.0).status_code == 200
    assert again.stop() == 0


def test_with_no_writable_temporary_directory_the_workers_are_spawned_and_the_instance_becomes_ready(
    start_live_service: Callable[..., LiveService],
) -> None:
    """A read-only root file system: the supervisor stopped with a traceback (its readiness marker needed a
    temporary directory); now the fork server's absence is one warning and `/ready` still waits for both."""
    service = start_live_service(
        {"WEB_CONCURRENCY": "2"}, module="tests.support.no_temp_dir_service", ready_timeout=READY_TIMEOUT_S
    )
    assert len(ready_workers(service)) == 2  # `/ready` answered 200: every worker serves
    lines = log_lines(service)
    assert any(line.get("message") == "cannot start the fork server: spawning the workers instead" for line in lines)
    assert any(line.get("message") == "every worker serves: the instance is ready" for line in lines)
    assert stopped_cleanly(service)
    assert "Traceback" not in service.logs()
