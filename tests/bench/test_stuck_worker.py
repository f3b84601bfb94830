"""`bench.stuck_worker`: its figures count what they say, and its baseline really keeps a stuck worker where the
subject replaces it."""

from __future__ import annotations

import pytest

from bench import stuck_worker
from bench.thread_pong_variant import MODULE as THREAD_PONG_MODULE


def test_a_start_counts_slow_and_failed_probes_and_keeps_how_the_stuck_request_ended() -> None:
    stuck = {"outcome": "dropped (RemoteProtocolError)", "after_s": 5.1}
    figures = stuck_worker.start_figures([0.002, 4.5, None, 0.9, 1.2], stuck)
    assert figures == {
        "probes": 5,
        "failed_probes": 1,
        "slow_probes": 2,
        "slowest_probe_s": 4.5,
        "probe_wait_s_total": 6.6,
        "stuck_request": stuck,
    }
    other = stuck_worker.start_figures([0.001, 11.0], {"outcome": "answered 200", "after_s": 12.0})
    summary = stuck_worker.summary([figures, other])
    assert summary["probes"] == 7
    assert summary["failed_probes"] == 1
    assert summary["slow_probes"] == 3
    assert summary["slowest_probe_s"] == 11.0
    assert summary["median_probe_wait_s_total"] == pytest.approx((6.6 + 11.0) / 2, abs=0.01)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "outcome"),
    [("tests.support.spin_service", "dropped"), (THREAD_PONG_MODULE, "answered 200")],
    ids=["answer_from_loop", "answer_from_thread"],
)
def test_the_subject_replaces_the_stuck_worker_and_the_baseline_keeps_it(module: str, outcome: str) -> None:
    """A stall of 8 s against the default `WORKER_HUNG_AFTER_S` (5): the subject drops it, the baseline waits."""
    figures = stuck_worker.one_start(module, stall_s=8.0, probes=4, spacing_s=0.25)
    assert figures["stuck_request"]["outcome"].startswith(outcome)
    assert figures["failed_probes"] == 0
    if outcome == "dropped":
        assert figures["stuck_request"]["after_s"] < 8.0
