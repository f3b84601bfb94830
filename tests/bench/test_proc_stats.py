"""The benchmarks' /proc readers: figures of a live process, and nothing (not an error) for one that has gone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench import proc_stats

pytestmark = pytest.mark.skipif(not os.path.isdir(f"/proc/{os.getpid()}"), reason="/proc is Linux's")


def test_a_live_process_and_its_child_are_read() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        me = os.getpid()
        assert child.pid in proc_stats.children(me)
        assert proc_stats.tree(me)[0] == me
        assert child.pid in proc_stats.tree(me)
        sum(range(2_000_000))  # some CPU of our own
        own, whole = proc_stats.cpu_seconds(me), proc_stats.tree_cpu_seconds(me)
        assert own is not None
        assert whole is not None
        assert 0 < own <= whole
        rss, peak = proc_stats.rss_mb(me), proc_stats.peak_rss_mb(me)
        assert rss is not None
        assert peak is not None
        assert 0 < rss <= peak
        pss = proc_stats.pss_mb(me)
        assert pss is not None
        assert 0 < pss <= rss + 0.1  # its share of what it maps, never more than all of it
        assert proc_stats.status_kib(me, "NoSuchField") is None
        fds = proc_stats.open_fds(me)
        assert fds is not None
        assert fds >= 3
        command = proc_stats.cmdline(child.pid)
        assert command is not None
        assert b"time.sleep(30)" in command
    finally:
        child.kill()
        child.wait()


def test_a_process_that_has_gone_reads_as_missing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid names nothing now
    gone = child.pid
    assert proc_stats.cpu_seconds(gone) is None
    assert proc_stats.tree_cpu_seconds(gone) is None
    assert proc_stats.children(gone) == []
    assert proc_stats.rss_mb(gone) is None
    assert proc_stats.peak_rss_mb(gone) is None
    assert proc_stats.open_fds(gone) is None
    assert proc_stats.cmdline(gone) is None
    proc_stats.reset_peak_rss(gone)  # no error either


def test_the_machine_busy_time_grows_by_at_least_our_own_cpu() -> None:
    before_machine, before_own = proc_stats.machine_busy_seconds(), proc_stats.cpu_seconds(os.getpid())
    sum(range(20_000_000))  # about a second of CPU on one core, enough for the clock ticks /proc counts in
    after_machine, after_own = proc_stats.machine_busy_seconds(), proc_stats.cpu_seconds(os.getpid())
    assert before_machine is not None
    assert after_machine is not None
    assert before_own is not None
    assert after_own is not None
    # Other processes only add to the machine's figure. The two are sampled differently (the machine's in
    # clock ticks, a process's from the scheduler's own clock), and on a VM they disagree by a few per cent:
    # a CI run measured 0.43 s of the machine for 0.45 s of ours. Slack of a tenth and two ticks.
    assert after_machine - before_machine >= 0.9 * (after_own - before_own) - 0.02
    assert after_own - before_own > 0.05
