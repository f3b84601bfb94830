"""Servers for the GRACE throughput benchmark: the service with GRACE, and a bare echo of the GRACE request.

- `grace`: the service app exactly as `python -m librarian_svc` builds it, with GRACE's controller and
  graph added when the app does not register them yet (the same app either way once it does);
- `echo`: `Litestar([echo])` whose body type is `GraceRequest`, so msgspec decodes and validates the
  same bytes and the handler returns them: the cost of receiving and answering such a body at all.

    python -m bench.grace_servers grace|echo --port 8081
"""

from __future__ import annotations

import argparse

import uvicorn
from litestar import Litestar, post

from contracts.grace import GraceRequest

ECHO_PATH = "/bench/grace-echo"


@post(ECHO_PATH, status_code=200, sync_to_thread=False)
def echo(data: GraceRequest) -> GraceRequest:
    """Return the decoded, validated body (re-encoded by the framework)."""
    return data


def grace_app() -> Litestar:
    """The deployed app with GRACE (JSON logs as in the container)."""
    from graphs.grace.graph import build_graph
    from librarian_svc.app import ROUTE_HANDLERS, create_app
    from librarian_svc.controllers.grace import GraceController
    from librarian_svc.log_setup import configure_logging
    from librarian_svc.services import GRAPH_BUILDERS
    from librarian_svc.settings import load_settings

    GRAPH_BUILDERS.setdefault("grace", build_graph)
    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    extra = [] if GraceController in ROUTE_HANDLERS else [GraceController]
    return create_app(settings, extra_route_handlers=extra)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=("grace", "echo"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args(argv)
    app = grace_app() if args.variant == "grace" else Litestar(route_handlers=[echo], logging_config=None, debug=False)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        workers=1,
        loop="uvloop",
        http="httptools",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
