"""Echo servers for the framework benchmarks: the full service app and a bare Litestar app, same handler.

`POST /bench/echo` decodes the body as the Librarian request contract (`contracts.librarian.
LibrarianRequest`, so msgspec validates every field and constraint) and returns it. Mounted on:

- `full`: `create_app(settings, extra_route_handlers=[echo])`, i.e. the service as deployed, with its
  request-context middleware, access log (JSON lines, discarded), exception handlers, DI and OpenAPI;
- `bare`: `Litestar([echo])` with nothing else.

Both run one uvicorn worker with uvloop and httptools:

    python -m bench.echo_servers full|bare --port 8081
"""

from __future__ import annotations

import argparse

import uvicorn
from litestar import Litestar, post

from contracts.librarian import LibrarianRequest

ECHO_PATH = "/bench/echo"


@post(ECHO_PATH, status_code=200, sync_to_thread=False)
def echo(data: LibrarianRequest) -> LibrarianRequest:
    """Return the decoded, validated body (re-encoded by the framework)."""
    return data


def full_app() -> Litestar:
    """The service app exactly as `python -m librarian_svc` builds it, plus the echo route."""
    from librarian_svc.app import create_app
    from librarian_svc.log_setup import configure_logging
    from librarian_svc.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    return create_app(settings, extra_route_handlers=[echo])


def bare_app() -> Litestar:
    """Litestar with the echo route and nothing else (its default logging config switched off)."""
    return Litestar(route_handlers=[echo], logging_config=None, debug=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", choices=("full", "bare"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args(argv)
    app = full_app() if args.variant == "full" else bare_app()
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
