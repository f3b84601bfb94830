"""What /proc says about a process a benchmark started: CPU time, resident memory, children, descriptors (Linux).

The one place the benchmarks read /proc (proc(5)), so every report counts memory and CPU the same way.
A reader answers None (or nothing) when the process has gone or the machine has no /proc: a report then
shows the figure as missing instead of the run failing at its end.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a live process has used so far; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command name: state is field 3, utime and stime are fields 14 and 15 of proc(5).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float | None:
    """CPU time every core of the machine has spent busy so far (all processes, /proc/stat); None off Linux.

    What a benchmark on a shared machine compares with its own processes' CPU: the rest is other load.
    """
    try:
        line = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0]
    except OSError:
        return None
    # "cpu user nice system idle iowait irq softirq steal guest guest_nice": idle and iowait are not busy;
    # guest time is already counted in user.
    ticks = [int(field) for field in line.split()[1:]]
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU time of a process and all its descendants (the uvicorn supervisor and its workers); None off Linux."""
    own = cpu_seconds(pid)
    if own is None:
        return None
    return own + sum(tree_cpu_seconds(child) or 0.0 for child in children(pid))


def children(pid: int) -> list[int]:
    """The process's direct children (none when it has gone)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text(encoding="ascii").split()]
    except OSError:
        return []


def tree(pid: int) -> list[int]:
    """The process and all its descendants, parents before their children."""
    found = [pid]
    for child in children(pid):
        found += tree(child)
    return found


def cmdline(pid: int) -> bytes | None:
    """The process's command line (arguments separated by NUL bytes); None when it has gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def role(pid: int) -> str:
    """A worker supervisor's child: a worker (spawned), multiprocessing's fork server or resource tracker; "gone".

    The workers forked from the fork server (`librarian_svc/worker_process.py`) are its children, and
    share its command line.
    """
    command = cmdline(pid)
    if command is None:
        return "gone"
    if b"resource_tracker" in command:
        return "resource_tracker"
    return "fork_server" if b"multiprocessing.forkserver" in command else "worker"


def worker_pids(supervisor: int) -> list[int]:
    """The worker processes of the service's supervisor `supervisor`: its spawned children, or its fork server's."""
    found: list[int] = []
    for pid in children(supervisor):
        kind = role(pid)
        found += children(pid) if kind == "fork_server" else [pid] if kind == "worker" else []
    return found


def status_kib(pid: int, field: str, source: str = "status") -> int | None:
    """A memory figure in KiB of /proc/<pid>/`source` (`status`: `VmRSS` resident now, `VmHWM` its peak;
    `smaps_rollup`: `Pss`); None if absent."""
    try:
        for line in Path(f"/proc/{pid}/{source}").read_text(encoding="ascii").splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _mib(kib: int | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def rss_mb(pid: int) -> float | None:
    """Resident memory now, in MiB to one decimal."""
    return _mib(status_kib(pid, "VmRSS"))


def pss_mb(pid: int) -> float | None:
    """Proportional set size now, in MiB to one decimal: its own pages plus its share of those it shares.

    Summed over an instance's processes, it counts a page shared by forked workers once, as the memory
    limit does; resident sets count it in every process that maps it.
    """
    return _mib(status_kib(pid, "Pss", "smaps_rollup"))


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) since the process started or since `reset_peak_rss`, in MiB to one decimal."""
    return _mib(status_kib(pid, "VmHWM"))


def reset_peak_rss(pid: int) -> None:
    """Reset VmHWM (proc(5): writing 5 to clear_refs), so the next `peak_rss_mb` is the peak from now on."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5", encoding="ascii")


def open_fds(pid: int) -> int | None:
    """How many file descriptors the process has open; None when it has gone."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
