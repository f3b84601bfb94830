"""How many CPUs this process may use: the default number of worker processes (`WEB_CONCURRENCY=auto`).

`os.cpu_count()` reports the host's cores, not what the container may use. A container's CPU limit
is a CFS quota on its cgroup (Cloud Run's `cpu: "2"`, Kubernetes' `limits.cpu`, `docker run --cpus`):
`cpu.max` on cgroup v2, `cpu.cfs_quota_us` / `cpu.cfs_period_us` on v1. Affinity (`taskset`,
cpusets) limits it further. Starting more CPU-bound workers than that only makes them take turns
(and each costs its own memory), so the default is the smallest of the three, rounded up: a
quota of 1.5 CPUs gets two workers, which share it while steps wait on the model.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _quota(quota: str | None, period: str | None) -> float | None:
    """CPUs allowed by one quota/period pair; None for "no limit" or anything unreadable."""
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _ancestors(root: Path, relative: str) -> list[Path]:
    """The process's cgroup directory under `root` and every parent up to `root` (a parent's limit binds too)."""
    parts = [part for part in relative.strip("/").split("/") if part and part != ".."]
    return [root.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def _membership(proc_cgroup: Path) -> dict[str, str]:
    """Controller (or "" for the v2 unified hierarchy) → the process's cgroup path, from /proc/self/cgroup."""
    found: dict[str, str] = {}
    for line in (_read(proc_cgroup) or "").splitlines():
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        for controller in controllers.split(",") if controllers else [""]:
            found.setdefault(controller, path)
    return found


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_SELF_CGROUP) -> float | None:
    """The tightest CFS quota on this process's cgroup or its ancestors, in CPUs; None when unlimited."""
    membership = _membership(proc_cgroup)
    limits: list[float] = []
    if "" in membership:  # cgroup v2 (alone or in a hybrid layout)
        for directory in _ancestors(root, membership[""]):
            quota, _, period = (_read(directory / "cpu.max") or "").partition(" ")
            if (limit := _quota(quota, period)) is not None:
                limits.append(limit)
    v1 = next((path for controller, path in membership.items() if controller == "cpu"), None)
    if v1 is not None:
        mount = next((m for m in (root / "cpu", root / "cpu,cpuacct", root / "cpuacct,cpu") if m.is_dir()), None)
        if mount is not None:
            for directory in _ancestors(mount, v1):
                limit = _quota(_read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us"))
                if limit is not None:
                    limits.append(limit)
    return min(limits) if limits else None


def available_cpus(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_SELF_CGROUP) -> int:
    """CPUs this process may run on: affinity, capped by the cgroup quota rounded up; at least 1."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        count = os.cpu_count() or 1
    limit = cgroup_cpu_limit(root, proc_cgroup)
    if limit is not None:
        count = min(count, math.ceil(limit - 1e-9))
    return max(1, count)
