"""One listening socket per worker, so the kernel spreads new connections over the workers.

With one socket shared by every worker (uvicorn's way), a new connection goes to whichever worker's
event loop accepts first, and libuv (uvloop) accepts every pending connection each time it wakes. So
a burst of connections (a client opening its pool, Cloud Run's front end scaling up) can all land on
one worker, which then serves them for as long as they are kept alive while the other vCPU idles:
with two workers and wrk's 8 connections, 11 rounds of 150 left a worker with none and halved the
throughput (`python -m bench.worker_balance`; none of 150 with a socket per worker). With
SO_REUSEPORT every worker listens on a socket of its own, bound to the same address, and Linux gives
each new connection to one of them by a hash of its addresses: n connections all land on one of two
workers with probability 2^(1-n). The price: a worker whose event loop is blocked still gets its share
of new connections, which wait for it, where a shared socket let the other worker take them (README,
"One socket per worker").

The supervisor binds a worker's socket just before starting the worker, so while the first worker is
alone (the start-up probe's time) it takes every connection (a bound socket that does not listen yet
gets none), and keeps the socket open for the worker's replacement: connections queued for a worker
that died wait for its successor instead of being reset. The first socket listens as soon as it is
bound, and before it is bound a plain bind claims the address: a second instance started on the same
port fails with "address in use", as it would without SO_REUSEPORT, instead of joining this one's group.

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
        self._backlog = config.backlog
        self.per_worker = kernel_balances() if per_worker is None else per_worker
        self.bound: list[socket.socket] = []

    def for_worker(self, index: int) -> list[socket.socket]:
        """The sockets worker `index` (from 0) listens on: its own, or the one every worker shares."""
        wanted = index if self.per_worker else 0
        while len(self.bound) <= wanted:
            self.bound.append(self._bind())
        return [self.bound[wanted]]

    def _bind(self) -> socket.socket:
        first = not self.bound
        if first and self.per_worker:
            with self._open(reuse_port=False) as claim:  # "address in use" if another process listens there
                self._port = claim.getsockname()[1]
        sock = self._open(reuse_port=self.per_worker)
        try:
            if first:
                sock.listen(self._backlog)  # the address is the instance's from now on
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]  # PORT=0: every later socket joins the port the first one got
        sock.set_inheritable(True)
        return sock

    def _open(self, *, reuse_port: bool) -> socket.socket:
        """A socket bound to the address (the `":" in host` test is uvicorn's own, for IPv6 literals)."""
        sock = socket.socket(socket.AF_INET6 if ":" in self._host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((self._host, self._port))
        except OSError:
            sock.close()
            raise
        return sock
