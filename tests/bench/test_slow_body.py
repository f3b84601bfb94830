"""`bench.slow_body`: its figures count what they say, and its subject cuts the slow body off and serves the queue."""

from __future__ import annotations

import pytest

from bench import slow_body


def test_the_queue_figures_count_statuses_and_time() -> None:
    figures = slow_body.queue_figures([(200, 6.1), (503, 25.0), (200, 7.3)])
    assert figures == {
        "queued": 3,
        "statuses": {"200": 2, "503": 1},
        "served": 2,
        "median_s": 7.3,
        "slowest_s": 25.0,
    }


def test_the_slow_body_is_as_large_as_asked() -> None:
    assert 3_000_000 <= len(slow_body.slow_body(3.0)) < 3_300_000


@pytest.mark.slow
def test_the_subject_cuts_the_slow_body_off_and_serves_the_queue() -> None:
    """3 MB at 50 KB/s against the default 1,000 KB/s: 408 soon after the 2 s grace, then the queued search is
    served."""
    figures = slow_body.one_variant(None, queued=1, slow_mb=3.0, trickle_kb_s=50.0)
    assert figures["slow_connection"]["answer"].startswith("HTTP/1.1 408")
    assert figures["slow_connection"]["after_s"] < 6.0
    assert figures["served"] == 1
