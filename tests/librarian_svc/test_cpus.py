"""The CPUs a process may use: cgroup v2 and v1 quotas (the tightest on the path up), affinity, rounding."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from librarian_svc.cpus import available_cpus, cgroup_cpu_limit


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


@pytest.fixture(name="affinity")
def fixture_affinity(monkeypatch: pytest.MonkeyPatch) -> int:
    """Pretend the process may run on 8 CPUs, whatever this machine has."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    return 8


def test_cgroup_v2_quota_in_a_container(tmp_path: Path) -> None:
    """cgroup namespace: /proc/self/cgroup says `0::/`, the limit is in the root's cpu.max (Cloud Run cpu: 2)."""
    write(tmp_path / "proc", "0::/\n")
    write(tmp_path / "cg" / "cpu.max", "200000 100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", tmp_path / "proc") == 2.0


def test_cgroup_v2_the_tightest_limit_on_the_path_binds(tmp_path: Path) -> None:
    write(tmp_path / "proc", "0::/outer/inner\n")
    write(tmp_path / "cg" / "outer" / "cpu.max", "150000 100000\n")
    write(tmp_path / "cg" / "outer" / "inner" / "cpu.max", "max 100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", tmp_path / "proc") == 1.5


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    write(tmp_path / "proc", "4:memory:/x\n2:cpu,cpuacct:/docker/abc\n")
    base = tmp_path / "cg" / "cpu,cpuacct" / "docker" / "abc"
    write(base / "cpu.cfs_quota_us", "50000\n")
    write(base / "cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", tmp_path / "proc") == 0.5


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "max 100000\n"}, None),  # v2, no limit
        ({"cpu.max": "garbage\n"}, None),
        ({}, None),  # no cgroup files at all (macOS, a bare chroot)
    ],
)
def test_no_readable_limit_means_unlimited(tmp_path: Path, files: dict[str, str], expected: float | None) -> None:
    write(tmp_path / "proc", "0::/\n")
    for name, text in files.items():
        write(tmp_path / "cg" / name, text)
    (tmp_path / "cg").mkdir(exist_ok=True)
    assert cgroup_cpu_limit(tmp_path / "cg", tmp_path / "proc") is expected


def test_cgroup_v1_unlimited_quota_is_minus_one(tmp_path: Path) -> None:
    write(tmp_path / "proc", "1:cpu:/\n")
    write(tmp_path / "cg" / "cpu" / "cpu.cfs_quota_us", "-1\n")
    write(tmp_path / "cg" / "cpu" / "cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", tmp_path / "proc") is None


@pytest.mark.parametrize(("quota", "workers"), [("200000 100000", 2), ("150000 100000", 2), ("50000 100000", 1)])
def test_workers_are_the_quota_rounded_up_within_the_affinity(
    tmp_path: Path, affinity: int, quota: str, workers: int
) -> None:
    write(tmp_path / "proc", "0::/\n")
    write(tmp_path / "cg" / "cpu.max", quota)
    assert available_cpus(tmp_path / "cg", tmp_path / "proc") == workers


def test_without_a_quota_the_affinity_counts(tmp_path: Path, affinity: int) -> None:
    write(tmp_path / "proc", "0::/\n")
    write(tmp_path / "cg" / "cpu.max", "max 100000")
    assert available_cpus(tmp_path / "cg", tmp_path / "proc") == affinity


def test_a_quota_larger_than_the_affinity_does_not_add_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    write(tmp_path / "proc", "0::/\n")
    write(tmp_path / "cg" / "cpu.max", "400000 100000")
    assert available_cpus(tmp_path / "cg", tmp_path / "proc") == 1
