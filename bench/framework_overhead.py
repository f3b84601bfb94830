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

from typing import Any

import msgspec

from bench.echo_servers import ECHO_PATH
from bench.tools import WrkSettings, emit, log
from bench.wrk_compare import Target, arguments, echo_server, measure, ratios, report, running, wrk_report, wrk_settings

MODULE = "bench.framework_overhead"


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
    body = small_payload()
    servers = [
        echo_server("full", body="librarian", variant="full", env={"LOG_LEVEL": "info"}),
        echo_server("bare", body="librarian"),
        echo_server("full_no_access_log", body="librarian", variant="full", env={"LOG_LEVEL": "warning"}),
    ]
    with running(servers):
        log(f"{len(body)}-byte body")
        measured = measure([Target(s.name, s.url(ECHO_PATH), body) for s in servers], settings, repeat)
    medians = measured.medians
    return report(
        MODULE,
        "requests/s of a trivial validated POST on the full service app vs a bare Litestar app",
        servers={
            "full": "python -m bench.echo_servers full  # create_app(settings, extra_route_handlers=[echo])",
            "bare": "python -m bench.echo_servers bare  # Litestar([echo])",
            "full_no_access_log": "LOG_LEVEL=warning python -m bench.echo_servers full  # no access-log line",
            "uvicorn": "1 worker, loop=uvloop, http=httptools, access_log=False",
        },
        wrk=wrk_report(settings, repeat),
        payload_bytes=len(body),
        full=medians["full"],
        bare=medians["bare"],
        **ratios(medians, "full", "bare"),
        full_no_access_log=medians["full_no_access_log"],
        **ratios(medians, "full_no_access_log", "bare", ["requests_per_s"]),
    )


def main(argv: list[str] | None = None) -> None:
    args = arguments(__doc__, repeat=3, duration=8, connections=32).parse_args(argv)
    emit(run(wrk_settings(args), args.repeat), args.output)


if __name__ == "__main__":
    main()
