"""One listening socket per worker (`librarian_svc/worker_sockets.py`): distinct sockets on one port, the same one
for a worker's replacement, and the kernel spreading a burst of connections over them.

The live checks (each worker process holds its own listening socket; a burst reaches every worker) are in
test_workers.py.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator

import pytest
import uvicorn
from uvicorn.config import STARTUP_FAILURE

from librarian_svc.worker_sockets import WorkerSockets, kernel_balances
from librarian_svc.workers import supervise


def config(host: str = "127.0.0.1", port: int = 0) -> uvicorn.Config:
    return uvicorn.Config("librarian_svc.workers:create_worker_app", host=host, port=port, workers=2)


@contextlib.contextmanager
def closing_all(sockets: WorkerSockets) -> Iterator[WorkerSockets]:
    try:
        yield sockets
    finally:
        for sock in sockets.bound:
            sock.close()


def reuses_port(sock: socket.socket) -> bool:
    return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT))


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="Linux balances SO_REUSEPORT listeners; elsewhere shared"
)
def test_this_platform_balances_reuseport_listeners() -> None:
    """The service runs on Linux (the image, Cloud Run): there every worker gets a socket of its own."""
    assert kernel_balances()
    assert WorkerSockets(config()).per_worker


def test_each_worker_gets_its_own_socket_on_the_one_port_and_keeps_it_for_its_replacement() -> None:
    with closing_all(WorkerSockets(config(), per_worker=True)) as sockets:
        first, second = sockets.for_worker(0), sockets.for_worker(1)
        assert len(first) == len(second) == 1
        assert first[0] is not second[0]
        assert first[0].getsockname() == second[0].getsockname()  # PORT=0: the second joined the first's port
        assert all(reuses_port(sock) and sock.get_inheritable() for sock in sockets.bound)
        assert sockets.for_worker(1)[0] is second[0]  # a replacement listens where the dead worker did
        assert len(sockets.bound) == 2


def test_a_worker_started_out_of_order_gets_the_sockets_before_it_bound_too() -> None:
    with closing_all(WorkerSockets(config(), per_worker=True)) as sockets:
        third = sockets.for_worker(2)[0]
        assert len(sockets.bound) == 3
        assert sockets.bound[2] is third
        assert {sock.getsockname() for sock in sockets.bound} == {third.getsockname()}


def test_without_kernel_balancing_every_worker_shares_the_first_socket() -> None:
    with closing_all(WorkerSockets(config(), per_worker=False)) as sockets:
        shared = sockets.for_worker(0)[0]
        assert [sockets.for_worker(index)[0] for index in range(4)] == [shared] * 4
        assert sockets.bound == [shared]
        assert not reuses_port(shared)


def test_an_ipv6_host_gets_an_ipv6_socket() -> None:
    with closing_all(WorkerSockets(config(host="::1"), per_worker=True)) as sockets:
        assert sockets.for_worker(0)[0].family == socket.AF_INET6
        assert sockets.for_worker(1)[0].getsockname()[:2] == sockets.bound[0].getsockname()[:2]


def test_the_kernel_spreads_a_burst_of_connections_over_the_workers_sockets() -> None:
    """64 connections opened at once reach both listeners (all on one: probability 2^-63)."""
    connections = 64
    with closing_all(WorkerSockets(config(), per_worker=True)) as sockets:
        listeners = [sockets.for_worker(0)[0], sockets.for_worker(1)[0]]
        for listener in listeners:
            listener.listen(connections)
            listener.setblocking(False)
        address = listeners[0].getsockname()
        clients = [socket.create_connection(address, timeout=5) for _ in range(connections)]
        try:
            accepted = [_accept_all(listener) for listener in listeners]
        finally:
            for client in clients:
                client.close()
        assert sum(accepted) == connections
        assert min(accepted) > 0, accepted


def _accept_all(listener: socket.socket) -> int:
    count = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def listens(sock: socket.socket) -> bool:
    return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))


def test_the_first_socket_listens_at_once_and_the_others_only_once_their_worker_does() -> None:
    """A socket that does not listen gets no connections: the first worker takes them all while it is alone."""
    with closing_all(WorkerSockets(config(), per_worker=True)) as sockets:
        first, second = sockets.for_worker(0)[0], sockets.for_worker(1)[0]
        assert listens(first)
        assert not listens(second)
        clients = [socket.create_connection(first.getsockname(), timeout=5) for _ in range(16)]
        try:
            first.setblocking(False)
            assert _accept_all(first) == 16
        finally:
            for client in clients:
                client.close()


def test_a_second_instance_on_the_port_is_refused_although_both_reuse_it() -> None:
    """SO_REUSEPORT alone would let another instance of the same user join this one's group and take half its
    connections; the plain bind that claims the address first fails as it would without SO_REUSEPORT."""
    with closing_all(WorkerSockets(config(), per_worker=True)) as running:
        port = running.for_worker(0)[0].getsockname()[1]
        second = WorkerSockets(config(port=port), per_worker=True)
        with pytest.raises(OSError):
            second.for_worker(0)
        assert second.bound == []
        assert supervise(config(port=port)) == STARTUP_FAILURE
        assert len(running.bound) == 1


def test_a_port_taken_by_another_process_is_an_os_error_and_leaves_nothing_open() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        sockets = WorkerSockets(config(port=port), per_worker=True)
        with pytest.raises(OSError):
            sockets.for_worker(0)
        assert sockets.bound == []


def test_the_supervisor_stops_with_the_start_up_failure_status_when_it_cannot_listen() -> None:
    """As one worker does (uvicorn exits 3): no worker is started on an address the instance cannot have."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert supervise(config(port=taken.getsockname()[1])) == STARTUP_FAILURE
