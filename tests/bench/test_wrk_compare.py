"""The wrk comparisons read a server's CPU per request around each measured round, warm-up left out."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench.tools as tools
import bench.wrk_compare as wrk_compare
from bench.proc_stats import cmdline
from bench.tools import WrkResult, WrkSettings, free_port, run_wrk
from bench.wrk_compare import Server, running, summarize


def _result(requests: int, cpu_ms: float | None = None) -> WrkResult:
    return WrkResult(
        requests_per_s=requests / 2,
        requests=requests,
        p50_ms=1.0,
        p90_ms=2.0,
        p99_ms=3.0,
        max_ms=4.0,
        mean_ms=1.5,
        errors={"connect": 0, "read": 0, "write": 0, "non_2xx": 0, "timeout": 0},
        server_cpu_ms_per_request=cpu_ms,
    )


@pytest.mark.parametrize("pid", [4242, None], ids=["server named", "no server"])
def test_the_cpu_is_read_around_the_measured_run_only(monkeypatch: pytest.MonkeyPatch, pid: int | None) -> None:
    """The warm-up runs before the first reading; the measured run between the two readings."""
    events: list[str] = []
    readings = iter([10.0, 12.5])

    def fake_wrk(wrk: str, url: str, script: Path, settings: WrkSettings, duration_s: int) -> WrkResult:
        events.append(f"wrk {duration_s} s")
        return _result(500)

    def fake_cpu(read_pid: int) -> float:
        assert read_pid == pid
        events.append("cpu")
        return next(readings)

    monkeypatch.setattr(tools, "_wrk_once", fake_wrk)
    monkeypatch.setattr(tools, "tree_cpu_seconds", fake_cpu)
    result = run_wrk("wrk", "http://x", Path("s.lua"), WrkSettings(duration_s=8, warmup_s=3), server_pid=pid)
    if pid is None:
        assert events == ["wrk 3 s", "wrk 8 s"]
        assert result.server_cpu_ms_per_request is None
    else:
        assert events == ["wrk 3 s", "cpu", "wrk 8 s", "cpu"]
        assert result.server_cpu_ms_per_request == 5.0  # 2.5 s of CPU over 500 requests


def test_a_server_gone_before_the_reading_reports_no_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "_wrk_once", lambda *args: _result(500))
    monkeypatch.setattr(tools, "tree_cpu_seconds", lambda pid: None)
    result = run_wrk("wrk", "http://x", Path("s.lua"), WrkSettings(), warmup=False, server_pid=1)
    assert result.server_cpu_ms_per_request is None


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [
        ([2.0, 1.0, 3.0], {"server_cpu_ms_per_request": 2.0, "all_runs_server_cpu_ms_per_request": [2.0, 1.0, 3.0]}),
        ([2.0, None, 3.0], {}),
        ([None], {}),
    ],
    ids=["every round", "one round without", "none"],
)
def test_the_summary_gives_the_median_cpu_only_when_every_round_measured_it(
    cpu: list[float | None], expected: dict[str, object]
) -> None:
    summary = summarize([_result(100 + i, figure) for i, figure in enumerate(cpu)])
    assert {key: value for key, value in summary.items() if "cpu" in key} == expected


def test_running_yields_each_server_process_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wrk_compare, "ensure_wrk", lambda: "wrk")  # no load here: wrk is not needed
    port = free_port()
    argv = ("python3", "-m", "http.server", str(port), "--bind", "127.0.0.1")
    server = Server("plain", argv, port, ready_path="/", any_status=True)
    with running([server]) as pids:
        assert set(pids) == {"plain"}
        command = cmdline(pids["plain"])
        assert command is not None
        assert b"http.server" in command


@pytest.mark.parametrize(
    ("base", "subject", "rounds", "median"),
    [
        # One GRACE run of session 24: the base's middle round ran in a faster spell than its other two.
        ([145.4, 195.9, 149.9], [389.4, 420.5, 350.9], [2.678, 2.147, 2.341], 2.341),
        ([100.0, 200.0], [200.0, 300.0], [2.0, 1.5], 1.5),  # the lower middle, as `summarize` takes
        ([0.0, 100.0], [50.0, 100.0], [None, 1.0], None),
    ],
    ids=["drift between rounds", "even rounds", "a round without a baseline"],
)
def test_each_round_is_compared_with_the_base_round_run_beside_it(
    base: list[float], subject: list[float], rounds: list[float | None], median: float | None
) -> None:
    assert wrk_compare.paired_ratios(base, subject) == rounds
    assert wrk_compare.median_ratio(rounds) == median


def test_rounds_that_do_not_pair_are_refused() -> None:
    with pytest.raises(ValueError, match="pair one to one"):
        wrk_compare.paired_ratios([1.0, 2.0], [1.0])
