"""One listening socket per worker, so the kernel spreads new connections over the workers.

With one socket shared by every worker (uvicorn's way), a new connection goes to whichever worker's
event loop accepts first, and libuv (uvloop) accepts every pending connection each time it wakes. So
a burst of connections (a client opening its pool, Cloud Run's front end scaling up) can all land on
one worker, which then serves them for as long as they are kept alive while the other vCPU idles:
with two workers and wrk's 8 connections, one server start in five or six left a worker with none and
halved the throughput (`python -m bench.worker_balance`). With SO_REUSEPORT every worker listens on a
socket of its own, bound to the same address, and Linux gives each new connection to one of them by
a hash of its addresses: n connections all land on one of two workers with probability 2^(1-n).

The supervisor binds a worker's socket just before starting the worker, so while the first worker is
alone (the start-up probe's time) it takes every connection, and keeps the socket open for the
worker's replacement: connections queued for a worker that died wait for its successor instead of
being reset.

Where the kernel does not balance SO_REUSEPORT listeners (outside Linux), the workers share one
socket, as uvicorn does.
"""

from __future__ import annotations

import socket
import sys

import uvicorn


def kernel_balances() -> bool:
    """Whether listeners bound with SO_REUSEPORT share the connections (Linux; elsewhere one may take them all)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


class WorkerSockets:
    """The instance's listening sockets: worker i's, bound when first asked for, the same for its replacements.

    `bound` is every socket bound so far (the supervisor closes them at shutdown). Raises `OSError` when
    the address cannot be bound, as `socket.bind` does.
    """

    def __init__(self, config: uvicorn.Config, *, per_worker: bool | None = None) -> None:
        self._host = config.host
        self._port = config.port
        self.per_worker = kernel_balances() if per_worker is None else per_worker
        self.bound: list[socket.socket] = []

    def for_worker(self, index: int) -> list[socket.socket]:
        """The sockets worker `index` (from 0) listens on: its own, or the one every worker shares."""
        wanted = index if self.per_worker else 0
        while len(self.bound) <= wanted:
            self.bound.append(self._bind())
        return [self.bound[wanted]]

    def _bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.per_worker:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((self._host, self._port))
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]  # PORT=0: every later socket joins the port the first one got
        sock.set_inheritable(True)
        return sock
