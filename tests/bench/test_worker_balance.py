"""`bench.worker_balance`: its baseline really shares one socket, its subject really has one per worker, and its
summary counts a round that left a worker idle."""

from __future__ import annotations

import sys

import pytest

from bench import worker_balance
from bench.proc_stats import worker_pids
from bench.shared_socket_variant import MODULE as SHARED_MODULE
from bench.tools import WrkSettings, free_port, server_process
from tests.support.proc_sockets import listening_sockets, sockets_held


def test_the_summary_counts_the_rounds_that_left_a_worker_idle() -> None:
    rounds = [
        worker_balance.round_figures(1000.0, 9.0, [3.9, 3.8]),
        worker_balance.round_figures(510.0, 20.0, [4.0, 0.01]),
        worker_balance.round_figures(980.0, 11.0, [3.5, 0.5]),
    ]
    assert [measured["idle_worker"] for measured in rounds] == [False, True, False]
    summary = worker_balance.summary(rounds, starts=1)
    assert summary["starts"] == 1
    assert summary["rounds"] == 3
    assert summary["rounds_with_an_idle_worker"] == 1  # 0.5 of 4.0 is 12.5 %: busy enough
    assert summary["min_requests_per_s"] == 510.0
    assert summary["median_requests_per_s"] == 980.0
    assert summary["max_busier_worker_share"] == 0.998
    assert summary["runs"] == rounds


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "sockets"), [("librarian_svc", 2), (SHARED_MODULE, 1)], ids=["socket_per_worker", "shared_socket"]
)
def test_each_variant_listens_as_it_says(module: str, sockets: int) -> None:
    """The subject has a socket per worker, the baseline one socket that both workers hold."""
    port = free_port()
    env = {"PORT": str(port), "WEB_CONCURRENCY": "2", "LOG_LEVEL": "warning"}
    with server_process((sys.executable, "-m", module), port=port, env=env, ready_path="/ready") as process:
        listening = listening_sockets(port)
        workers = worker_pids(process.pid)
        assert len(workers) == 2
        assert len(listening) == sockets
        assert set.union(*(sockets_held(pid) & listening for pid in workers)) == listening


@pytest.mark.slow
def test_a_start_measures_both_workers_round_by_round_and_hands_back_the_body_for_the_next() -> None:
    settings = WrkSettings(connections=4, duration_s=1, warmup_s=0)
    rounds, body = worker_balance.one_start("librarian_svc", settings, rounds=2)
    assert b'"tool_result"' in body
    assert len(rounds) == 2
    assert all(measured["requests_per_s"] > 0 and len(measured["worker_cpu_s"]) == 2 for measured in rounds)
    again, same = worker_balance.one_start(SHARED_MODULE, settings, rounds=1, body=body)  # the state verifies anew
    assert same is body
    assert again[0]["requests_per_s"] > 0
