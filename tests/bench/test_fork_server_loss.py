"""`bench.fork_server_loss`: its summary reports what the runs measured, and its baseline really holds the loop
where the subject does not."""

from __future__ import annotations

import pytest

from bench import fork_server_loss


def test_the_summary_takes_the_median_of_the_runs() -> None:
    runs = [
        {"variant": "thread", "longest_tick_s": tick, "sigterm_to_draining_s": draining, "exit_status": 0}
        for tick, draining in [(0.002, 0.09), (0.004, 0.05), (0.003, 0.2)]
    ]
    summary = fork_server_loss.summary(runs)
    assert summary["median_longest_tick_s"] == 0.003
    assert summary["median_sigterm_to_draining_s"] == 0.09
    assert summary["runs"] == runs


@pytest.mark.slow
def test_the_inline_baseline_holds_the_loop_while_the_new_fork_server_imports_and_the_service_does_not() -> None:
    subject, baseline = (fork_server_loss.measure(variant, after_s=0.2) for variant in ("thread", "inline"))
    assert subject["exit_status"] == baseline["exit_status"] == 0
    # The new fork server imports the service (about a second here) before it forks: the inline start waits that long.
    assert baseline["longest_tick_s"] >= 0.3
    assert subject["longest_tick_s"] < baseline["longest_tick_s"] / 3
    assert subject["sigterm_to_draining_s"] < baseline["sigterm_to_draining_s"]
