"""Shared benchmark plumbing: machine info, server subprocesses, the wrk load generator, reports.

Every benchmark measures its subject and its baseline in the same run on the same machine and
reports the ratio, so the figures mean something on a laptop, a CI runner or a Cloud Run host.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Self

from bench.proc_stats import tree_cpu_seconds
from tests.support.live_service import environment_without_service_settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = PROJECT_ROOT / "bench" / "results"
JSQUAD = PROJECT_ROOT.parent / "shared" / "data" / "jsquad" / "valid-v1.3.json"
WRK_APT_PACKAGE = "wrk"
_WRK_MARKER = "WRK_JSON "

# wrk's Lua hooks: POST the file's bytes as JSON; at the end print one JSON line with exact counts.
_WRK_LUA = """
local f = assert(io.open("{body_path}", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{marker}{{"requests": %d, "duration_us": %d, "bytes": %d, "connect_errors": %d, "read_errors": %d, '
    .. '"write_errors": %d, "non_2xx": %d, "timeouts": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, '
    .. '"max_us": %d, "mean_us": %.1f}}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
"""


def log(message: str) -> None:
    """Progress goes to stderr; stdout carries only the JSON report."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def machine_info() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_status(port: int, path: str, timeout: float = 1.0) -> int | None:
    """GET `path` on loopback with a raw socket (cheap enough to poll); None when nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            head = sock.recv(64)
    except OSError:
        return None
    match = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return int(match.group(1)) if match else None


def wait_for_status(
    port: int,
    path: str,
    process: subprocess.Popen[bytes],
    timeout: float,
    interval: float = 0.005,
    *,
    any_status: bool = False,
) -> float:
    """Poll until `path` answers 200 (or anything, with `any_status`); return the monotonic time it did.

    Raises:
        RuntimeError: The process exited first, or nothing answered within `timeout`.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = http_status(port, path)
        if status == 200 or (any_status and status is not None):
            return time.monotonic()
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode} before {path} answered 200")
        time.sleep(interval)
    raise RuntimeError(f"{path} did not answer 200 within {timeout}s")


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a server under test: no provider keys, the embedded engine, JSON logs.

    Bytecode may be written (and is, by the first run), as the image compiles it at build time.
    """
    env = environment_without_service_settings()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env |= {
        "PYTHONPATH": str(PROJECT_ROOT),
        "HOST": "127.0.0.1",
        "LLM_PROVIDER": "heuristic",
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "info",
        # One worker, as the figures in bench/README.md were measured, unless the caller's environment asks
        # for more (`WEB_CONCURRENCY=2 python -m bench.grace_throughput`); the service's default is every CPU.
        "WEB_CONCURRENCY": os.environ.get("WEB_CONCURRENCY", "1"),
    }
    return env | dict(extra or {})


def service_workers() -> str:
    """The service's `WEB_CONCURRENCY` in the benchmarks (`child_env`): "1" unless the caller's environment says."""
    return child_env()["WEB_CONCURRENCY"]


def service_label() -> str:
    """How the benchmarks run the service, for their reports."""
    return f"python -m librarian_svc  # LLM_PROVIDER=heuristic LOG_FORMAT=json, WEB_CONCURRENCY={service_workers()}"


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL when it does not exit in time."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def server_process(
    argv: Sequence[str],
    *,
    port: int,
    ready_path: str = "/health",
    any_status: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: Path = PROJECT_ROOT,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server subprocess (output discarded) in `cwd` until the block ends; it is ready when entered.

    Ready means `ready_path` answers 200, or answers at all with `any_status` (a bare app has no /health).
    """
    process = subprocess.Popen(
        list(argv), cwd=cwd, env=child_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_status(port, ready_path, process, timeout=60.0, any_status=any_status)
        yield process
    finally:
        stop_process(process)


def ensure_wrk() -> str:
    """The wrk binary; installs Debian's `wrk` with apt-get when missing (needs root), else explains."""
    found = shutil.which("wrk")
    if found:
        return found
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        log("wrk not found: installing it with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        # apt-get's progress goes to stderr with the benchmark's own: stdout carries the JSON report alone
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=sys.stderr)
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", WRK_APT_PACKAGE]
        subprocess.run(install, check=True, env=env, stdout=sys.stderr)
        found = shutil.which("wrk")
        if found:
            return found
    raise RuntimeError("wrk is required: install it (Debian/Ubuntu: `apt-get install wrk`, macOS: `brew install wrk`)")


@dataclass(frozen=True)
class WrkSettings:
    """Load-generator settings (one wrk thread per core left over after the one-worker server)."""

    threads: int = 1
    connections: int = 32
    duration_s: int = 10
    warmup_s: int = 3
    timeout_s: int = 10

    def as_dict(self) -> dict[str, int]:
        """For the report."""
        return asdict(self)


@dataclass(frozen=True)
class WrkResult:
    """One wrk run: throughput, latency percentiles and every kind of failure."""

    requests_per_s: float
    requests: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    errors: dict[str, int]
    server_cpu_ms_per_request: float | None = None
    """The server's CPU (its process and children, user + system) over the measured run ÷ its requests, when the
    caller named the server's process: the cost of a request with wrk's own CPU and the machine's other load left
    out, which requests/s on a shared machine is not."""

    @property
    def failed(self) -> int:
        """Requests that did not end in a 2xx (the run is invalid when this is not 0)."""
        return sum(self.errors.values())

    def as_dict(self) -> dict[str, Any]:
        """For the report."""
        return asdict(self)


def wrk_command(wrk: str, url: str, script: Path, settings: WrkSettings, duration_s: int) -> list[str]:
    """The exact wrk command line (also put in reports)."""
    return [
        wrk,
        f"-t{settings.threads}",
        f"-c{settings.connections}",
        f"-d{duration_s}s",
        f"--timeout={settings.timeout_s}s",
        "--latency",
        "-s",
        str(script),
        url,
    ]


def shown_wrk_command(settings: WrkSettings, url: str = "URL") -> str:
    """The measured wrk command as a reader would type it (`post.lua` POSTs the payload as JSON)."""
    return " ".join(wrk_command("wrk", url, Path("post.lua"), settings, settings.duration_s))


@contextmanager
def post_script(body: bytes) -> Iterator[Path]:
    """A temporary wrk Lua script that POSTs `body` as JSON."""
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
        body_path = Path(tmp) / "body.json"
        body_path.write_bytes(body)
        script = Path(tmp) / "post.lua"
        script.write_text(_WRK_LUA.format(body_path=body_path, marker=_WRK_MARKER), encoding="utf-8")
        yield script


def run_wrk(
    wrk: str, url: str, script: Path, settings: WrkSettings, *, warmup: bool = True, server_pid: int | None = None
) -> WrkResult:
    """Warm up (discarded), then measure; raise when wrk fails or any request was not a 2xx.

    With `server_pid`, the server's CPU over the measured run is read from /proc around it (warm-up left out).
    """
    if warmup and settings.warmup_s > 0:
        _wrk_once(wrk, url, script, settings, settings.warmup_s)
    cpu_before = tree_cpu_seconds(server_pid) if server_pid is not None else None
    result = _wrk_once(wrk, url, script, settings, settings.duration_s)
    cpu_after = tree_cpu_seconds(server_pid) if server_pid is not None else None
    if result.failed:
        raise RuntimeError(f"wrk against {url}: {result.failed} failed requests {result.errors}")
    if cpu_before is not None and cpu_after is not None and result.requests:
        per_request = round((cpu_after - cpu_before) / result.requests * 1000, 3)
        result = replace(result, server_cpu_ms_per_request=per_request)
    return result


def _wrk_once(wrk: str, url: str, script: Path, settings: WrkSettings, duration_s: int) -> WrkResult:
    command = wrk_command(wrk, url, script, settings, duration_s)
    completed = subprocess.run(command, capture_output=True, text=True, timeout=duration_s + 60, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"wrk failed ({completed.returncode}): {completed.stderr or completed.stdout}")
    lines = [line for line in completed.stdout.splitlines() if line.startswith(_WRK_MARKER)]
    if not lines:
        raise RuntimeError(f"wrk printed no summary:\n{completed.stdout}")
    raw = json.loads(lines[-1][len(_WRK_MARKER) :])
    seconds = raw["duration_us"] / 1e6
    return WrkResult(
        requests_per_s=round(raw["requests"] / seconds, 1) if seconds else 0.0,
        requests=raw["requests"],
        p50_ms=round(raw["p50_us"] / 1000, 2),
        p90_ms=round(raw["p90_us"] / 1000, 2),
        p99_ms=round(raw["p99_us"] / 1000, 2),
        max_ms=round(raw["max_us"] / 1000, 2),
        mean_ms=round(raw["mean_us"] / 1000, 2),
        errors={
            "connect": raw["connect_errors"],
            "read": raw["read_errors"],
            "write": raw["write_errors"],
            "non_2xx": raw["non_2xx"],
            "timeout": raw["timeouts"],
        },
    )


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator rounded, or None when the baseline is 0."""
    return round(numerator / denominator, 3) if denominator else None


def emit(report: Mapping[str, Any], output: Path | None) -> None:
    """Print the report as JSON on stdout and, when asked, write it to `output`."""
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text, flush=True)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")


def emit_in_process(module: str, question: str, argv: Sequence[str], args: Any, figures: Mapping[str, Any]) -> None:
    """`emit` an in-process CPU benchmark's report: what it asks, how to rerun it, its repeats, its figures.

    `args` is the benchmark's parsed command line, with `runs`, `rounds` and `output`.
    """
    emit(
        {
            "benchmark": module,
            "question": question,
            "command": command_line(module, argv),
            "runs": args.runs,
            "rounds": args.rounds,
            **figures,
        },
        args.output,
    )


def command_line(module: str, args: Sequence[str] = ()) -> str:
    """How to reproduce a report: the `python -m` line, run from the project root."""
    return " ".join(["python", "-m", module, *args])


class BackgroundLoop:
    """A daemon thread that runs `poll` every `interval_s` while a `with` block runs (samplers, probes).

    Subclasses write only what one round does; starting, stopping and joining the thread are here once.
    """

    interval_s: float = 0.1

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def poll(self) -> None:
        """One round of the loop's work."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
