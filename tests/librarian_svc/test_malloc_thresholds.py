"""Fixed malloc thresholds: a worker reuses the heap it has instead of faulting fresh pages in for every burst."""

from __future__ import annotations

import platform
import textwrap

import pytest

from librarian_svc import malloc_thresholds
from librarian_svc.malloc_thresholds import (
    M_MMAP_THRESHOLD,
    M_TRIM_THRESHOLD,
    MMAP_THRESHOLD_BYTES,
    TRIM_THRESHOLD_BYTES,
    fix_malloc_thresholds,
)
from tests.support.fresh_interpreter import last_json_line
from tests.support.live_service import PROJECT_ROOT

ON_GLIBC = platform.libc_ver()[0] == "glibc"


def test_both_thresholds_are_set_together() -> None:
    calls: list[tuple[int, int]] = []

    def mallopt(parameter: int, value: int) -> int:
        calls.append((parameter, value))
        return 1

    assert fix_malloc_thresholds(mallopt) is True
    assert calls == [(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES), (M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)]


@pytest.mark.parametrize("accepted", [(1, 0), (0, 1), (0, 0)])
def test_a_refused_threshold_is_reported(accepted: tuple[int, int]) -> None:
    answers = iter(accepted)
    assert fix_malloc_thresholds(lambda _parameter, _value: next(answers)) is False


def test_without_mallopt_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(malloc_thresholds, "libc_function", lambda _name: None)
    assert fix_malloc_thresholds() is False


@pytest.mark.skipif(not ON_GLIBC, reason="mallopt's thresholds are glibc's")
def test_a_repeated_burst_of_blocks_faults_no_page_in_once_the_thresholds_are_fixed() -> None:
    """40 blocks of 200 KB allocated and freed, 20 times, in a fresh interpreter, with and without the fix.

    With glibc's own thresholds each burst is given back to the kernel when freed (the first blocks were
    `mmap`ed, which raised the thresholds to just above them) and faulted in again by the next: ~1,900 minor
    faults a burst. Fixed, the heap keeps the pages and the bursts reuse them.
    """
    script = textwrap.dedent(
        """
        import json, resource, sys
        from librarian_svc.malloc_thresholds import fix_malloc_thresholds

        fixed = sys.argv[1] == "fixed" and fix_malloc_thresholds()

        def burst():
            blocks = [bytearray(200_000) for _ in range(40)]
            del blocks

        burst()
        burst()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(20):
            burst()
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20
        print(json.dumps({"fixed": fixed, "faults_per_burst": faults}))
        """
    )
    reports = {
        mode: last_json_line(script, mode, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT)}, timeout=60)
        for mode in ("default", "fixed")
    }
    assert reports["fixed"]["fixed"] is True
    assert reports["default"]["faults_per_burst"] > 1_000, reports  # the behaviour the fix exists for
    assert reports["fixed"]["faults_per_burst"] < 50, reports
