"""The benchmarks' shared background loop: it polls while its block runs and stops with it."""

from __future__ import annotations

import os
import time

from bench.memory_admission import TreeSampler
from bench.tools import BackgroundLoop


class _Counter(BackgroundLoop):
    interval_s = 0.005

    def __init__(self) -> None:
        super().__init__()
        self.polls = 0

    def poll(self) -> None:
        self.polls += 1


def test_a_background_loop_polls_while_its_block_runs_and_stops_after() -> None:
    with _Counter() as counter:
        time.sleep(0.05)
    after = counter.polls
    time.sleep(0.03)
    assert after >= 2
    assert counter.polls == after
    assert not counter._thread.is_alive()


def test_the_tree_sampler_records_this_process_peak() -> None:
    with TreeSampler(os.getpid()) as sampler:
        time.sleep(0.05)
    assert sampler.peak > 0
    assert os.getpid() in sampler.peak_per_process
