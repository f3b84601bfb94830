"""The benchmarks' shared tools: the background loop polls while its block runs and stops with it; installing wrk
leaves the report's stream clean."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.memory_admission import TreeSampler
from bench.tools import PROJECT_ROOT, BackgroundLoop


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


def test_installing_wrk_keeps_the_report_stream_clean(tmp_path: Path) -> None:
    """`ensure_wrk` runs apt-get when wrk is missing: its output must not reach stdout, the JSON report's stream.

    A fake `apt-get` on PATH prints as the real one does and "installs" wrk; the benchmark's stdout is then
    read by `> report.json` or by `make bench`, and must hold nothing of it.
    """
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    apt = fake_bin / "apt-get"
    apt.write_text(
        "#!/bin/sh\n"
        'echo "Selecting previously unselected package wrk."\n'
        f'if [ "$1" = install ]; then printf "#!/bin/sh\\n" > {fake_bin}/wrk; /bin/chmod +x {fake_bin}/wrk; fi\n',
        encoding="utf-8",
    )
    apt.chmod(0o755)
    # the installer runs only as root (as in CI): the child is told it is root, whoever runs the suite
    code = (
        "import os, sys; os.geteuid = lambda: 0; "
        "from bench.tools import ensure_wrk; print(ensure_wrk(), file=sys.stderr)"
    )
    env = {**os.environ, "PATH": str(fake_bin), "PYTHONPATH": str(PROJECT_ROOT)}  # only the fake: no real wrk
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "Selecting previously unselected package wrk." in done.stderr
    assert done.stderr.rstrip().endswith(f"{fake_bin}/wrk")  # the wrk it installed
