"""What the service's framework stack costs per request: full app vs bare Litestar, same handler, same run.

Both servers run one uvicorn worker (uvloop, httptools) in their own process and serve the same
`POST /bench/echo` handler (`bench.echo_servers`: body decoded and validated as the Librarian request
contract, then returned). The full app adds what every real request goes through: the request-context
middleware (request id, trace id, one JSON access-log line), exception handlers, DI and OpenAPI.
wrk POSTs the same small JSON body to both, alternating rounds; the ratio full/bare is the share of
bare throughput the service keeps (1.0 = no overhead). A third server, the full app with
`LOG_LEVEL=warning` (no access-log line), splits that overhead into logging and the rest.

    python -m bench.framework_overhead [--repeat 3] [--duration 8] [--connections 32]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import msgspec

from bench.echo_servers import ECHO_PATH
from bench.tools import (
    Target,
    WrkSettings,
    command_line,
    emit,
    ensure_wrk,
    free_port,
    log,
    machine_info,
    measure_alternating,
    ratio,
    server_process,
    shown_wrk_command,
    summarize,
)

MODULE = "bench.framework_overhead"
# name -> (bench.echo_servers variant, extra environment)
SERVERS: dict[str, tuple[str, dict[str, str]]] = {
    "full": ("full", {"LOG_LEVEL": "info"}),
    "bare": ("bare", {}),
    "full_no_access_log": ("full", {"LOG_LEVEL": "warning"}),
}


def small_payload() -> bytes:
    """A minimal but fully validated Librarian request (one round, two hits): a few hundred bytes."""
    hits = [
        {
            "document_id": f"doc-{i}",
            "page": i,
            "chunk_id": f"doc-{i}#0",
            "snippet": "富士山は日本で最も高い山で、標高は3776メートルである。",
            "score": 1.0 / (i + 1),
            "retrieval": "text",
            "metadata": {},
        }
        for i in range(2)
    ]
    body = {
        "request_id": "bench-echo-1",
        "user_query": "富士山の標高は?",
        "subject_id": "bench",
        "search_history": [{"queries_text": ["富士山 標高"], "queries_vector": [], "results": hits}],
        "state": None,
    }
    return msgspec.json.encode(body)


def run(settings: WrkSettings, repeat: int) -> dict[str, Any]:
    wrk = ensure_wrk()
    body = small_payload()
    ports = {name: free_port() for name in SERVERS}
    with ExitStack() as stack:
        for name, (variant, env) in SERVERS.items():
            argv = [sys.executable, "-m", "bench.echo_servers", variant, "--port", str(ports[name])]
            ready = "/health" if variant == "full" else ECHO_PATH
            stack.enter_context(
                server_process(argv, port=ports[name], ready_path=ready, any_status=variant == "bare", env=env)
            )
        log(f"servers up: {ports}; {len(body)}-byte body")
        targets = [Target(name, f"http://127.0.0.1:{port}{ECHO_PATH}", body) for name, port in ports.items()]
        results = measure_alternating(wrk, targets, settings, repeat)
    full, bare, quiet = (summarize(results[name]) for name in ("full", "bare", "full_no_access_log"))
    return {
        "benchmark": "framework_overhead",
        "question": "requests/s of a trivial validated POST on the full service app vs a bare Litestar app",
        "command": command_line(MODULE, sys.argv[1:]),
        "servers": {
            "full": "python -m bench.echo_servers full  # create_app(settings, extra_route_handlers=[echo])",
            "bare": "python -m bench.echo_servers bare  # Litestar([echo])",
            "full_no_access_log": "LOG_LEVEL=warning python -m bench.echo_servers full  # no access-log line",
            "uvicorn": "1 worker, loop=uvloop, http=httptools, access_log=False",
        },
        "wrk": {**settings.as_dict(), "repeat": repeat, "command": shown_wrk_command(settings)},
        "payload_bytes": len(body),
        "full": full,
        "bare": bare,
        "ratio_full_over_bare_requests_per_s": ratio(full["requests_per_s"], bare["requests_per_s"]),
        "ratio_full_over_bare_p50": ratio(full["p50_ms"], bare["p50_ms"]),
        "ratio_full_over_bare_p99": ratio(full["p99_ms"], bare["p99_ms"]),
        "full_no_access_log": quiet,
        "ratio_full_no_access_log_over_bare_requests_per_s": ratio(quiet["requests_per_s"], bare["requests_per_s"]),
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="alternating measured rounds per server")
    parser.add_argument("--duration", type=int, default=8, help="seconds per measured round")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured seconds before each server's first round")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    settings = WrkSettings(
        threads=args.threads, connections=args.connections, duration_s=args.duration, warmup_s=args.warmup
    )
    emit(run(settings, args.repeat), args.output)


if __name__ == "__main__":
    main()
