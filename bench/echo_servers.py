"""Echo servers for the HTTP benchmarks' baselines: the full service app or a bare Litestar app, same handler.

`POST /bench/echo` decodes the body as one request contract (`--body`: `librarian` =
`LibrarianRequest`, `grace` = `GraceRequest`, `proposal` = `ProposalRunRequest`; msgspec validates
every field and constraint) and returns it: the cost of receiving, decoding and answering such a
body at all. Mounted on:

- `full`: `create_app(settings, extra_route_handlers=[echo])`, i.e. the service as deployed, with its
  request-context middleware, access log (JSON lines, discarded), exception handlers, DI and OpenAPI;
- `bare`: `Litestar([echo])` with nothing else.

Both run one uvicorn worker with uvloop and httptools:

    python -m bench.echo_servers full|bare [--body librarian|grace|proposal] --port 8081
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn
from litestar import Litestar, post
from litestar.handlers import HTTPRouteHandler

from contracts.grace import GraceRequest
from contracts.librarian import LibrarianRequest
from contracts.proposal_quality import ProposalRunRequest

ECHO_PATH = "/bench/echo"
BODY_TYPES: dict[str, type[Any]] = {
    "librarian": LibrarianRequest,
    "grace": GraceRequest,
    "proposal": ProposalRunRequest,
}


def echo_handler(body: str) -> HTTPRouteHandler:
    """`POST /bench/echo` whose body type is the `body` contract: returns the decoded, validated body."""

    def echo(data: Any) -> Any:
        return data

    echo.__annotations__ = {"data": BODY_TYPES[body], "return": BODY_TYPES[body]}  # what Litestar decodes
    return post(ECHO_PATH, status_code=200, sync_to_thread=False)(echo)


def full_app(body: str) -> Litestar:
    """The service app exactly as `python -m librarian_svc` builds it, plus the echo route."""
    from librarian_svc.app import create_app
    from librarian_svc.log_setup import configure_logging
    from librarian_svc.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    return create_app(settings, extra_route_handlers=[echo_handler(body)])


def bare_app(body: str) -> Litestar:
    """Litestar with the echo route and nothing else (its default logging config switched off)."""
    return Litestar(route_handlers=[echo_handler(body)], logging_config=None, debug=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=("full", "bare"))
    parser.add_argument("--body", choices=tuple(BODY_TYPES), default="librarian", help="the request contract")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args(argv)
    app = full_app(args.body) if args.variant == "full" else bare_app(args.body)
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
