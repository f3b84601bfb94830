"""Which sockets listen on a port, and which a process holds, read from /proc (Linux): the service's real sockets."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def listening_sockets(port: int) -> set[int]:
    """The inodes of the sockets listening on `port` on this host (/proc/net/tcp and tcp6, state 0A)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found


def sockets_held(pid: int) -> set[int]:
    """The inodes of the sockets process `pid` has open."""
    found = set()
    for descriptor in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            target = os.readlink(descriptor)
            if target.startswith("socket:["):
                found.add(int(target[len("socket:[") : -1]))
    return found
