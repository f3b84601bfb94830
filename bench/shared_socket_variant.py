"""The service with every worker on one shared listening socket, as uvicorn binds it: `bench.worker_balance`'s contrast.

`python -m bench.shared_socket_variant` runs `librarian_svc` unchanged except that its supervisor binds one
socket for all the workers instead of one per worker (`librarian_svc/worker_sockets.py`): each new
connection then goes to whichever worker accepts first. This is how the service listened before
`worker_sockets`, and how it still listens outside Linux. Never used in production.
"""

from __future__ import annotations

import sys

import librarian_svc.worker_sockets as worker_sockets

MODULE = "bench.shared_socket_variant"


def one_shared_socket() -> bool:
    """`worker_sockets.kernel_balances` answering no: every worker listens on the first socket."""
    return False


if __name__ == "__main__":
    from librarian_svc.__main__ import main

    worker_sockets.kernel_balances = one_shared_socket
    sys.exit(main())
