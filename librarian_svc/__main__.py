"""`python -m librarian_svc`: validate settings, configure logging, serve with uvicorn on `WEB_CONCURRENCY` workers.

The command takes no arguments (`command_line`): `--help` prints the usage, anything else is a usage error.

Settings are loaded before anything heavy, and a `ConfigError` ends the process with one
line on stderr and exit status 2 (also when a worker finds it). With one worker the app is served
in this process; with several, this process supervises that many worker processes
(`librarian_svc.workers`). SIGTERM drains: in-flight requests finish or answer TIMEOUT within
`SHUTDOWN_GRACE_S`, and the process exits before Cloud Run's 10 s (`librarian_svc.drain`).

The cyclic garbage collector is paused while the process starts (`startup_gc`): start-up only
creates objects that live as long as the process, and collecting them cost about an eighth of
the cold start. Nothing heavy is imported at module level here, so the pause covers every import.
The start-up heap is then frozen out of the collector's reach: otherwise each full collection
while serving rescans those ~200,000 objects, a pause of over 100 ms for every request in flight
(with 80 Librarian sessions on one worker it doubled p99; `python -m bench.librarian_concurrency`).
Each worker process does the same for itself (`workers.create_worker_app`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from librarian_svc.startup_gc import collector_paused


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    from librarian_svc.drain import exit_now

    exit_now(0)


def _warn_about_ignored_grace_variables() -> None:
    """Name each `GRACE_` variable that looks like a mistyped override (it is not read), once per instance."""
    import structlog

    from graphs.config_files import ignored_grace_variables

    for name in ignored_grace_variables(os.environ):
        structlog.get_logger(__name__).warning(
            "not a GRACE override (GRACE_<SECTION>__<KEY>, two underscores after the section): ignored", variable=name
        )


def main(app_factory: str | None = None) -> int:
    """Run the service until SIGTERM/SIGINT; return the process exit status (`app_factory`: tests add routes)."""
    with collector_paused():
        from librarian_svc.settings import ConfigError, load_settings, report_config_error

        try:
            settings = load_settings()
        except ConfigError as exc:
            return report_config_error(exc)

        from librarian_svc import workers
        from librarian_svc.drain import exit_now
        from librarian_svc.log_setup import configure_logging

        configure_logging(settings.log_format, settings.log_level)
        _warn_about_ignored_grace_variables()
        config = workers.uvicorn_config(settings, app_factory or workers.APP_FACTORY)
        if settings.web_concurrency == 1:
            # uvicorn restores the previous SIGTERM handler after its graceful shutdown and re-raises the
            # signal; with this handler that ends the process with status 0 instead of "killed by SIGTERM".
            signal.signal(signal.SIGTERM, _exit_cleanly)
            workers.use_settings(settings)
            # Still inside the pause: uvicorn calls the app factory here, which switches the collector
            # on for serving once the app is built.
            return workers.serve_in_process(config)
    workers.share_ephemeral_key(settings)
    workers.share_worker_count(settings)
    exit_now(workers.supervise(config))


USAGE = """usage: python -m librarian_svc

Serve librarian-svc: WEB_CONCURRENCY worker processes on HOST:PORT (default 0.0.0.0:8080) until SIGTERM.
It takes no arguments: every setting is an environment variable, listed with its default in the
configuration table of README.md ("Configuration"), and checked at start-up.
"""
USAGE_ERROR_STATUS = 2
"""The exit status for arguments the command does not take (as argparse's)."""


def command_line(argv: Sequence[str]) -> int | None:
    """What the arguments ask before anything starts: None to serve, else the exit status once answered.

    The command used to ignore its arguments, so `--help` started the service listening on every interface.
    `main` itself never reads `sys.argv`: the benchmarks and test services call it from their own commands.
    """
    if not argv:
        return None
    if list(argv) in (["--help"], ["-h"]):
        print(USAGE, end="")
        return 0
    print(
        f"librarian-svc: usage error: unexpected argument {argv[0]!r}: settings are environment variables "
        "(python -m librarian_svc --help)",
        file=sys.stderr,
    )
    return USAGE_ERROR_STATUS


if __name__ == "__main__":
    answered = command_line(sys.argv[1:])
    sys.exit(main() if answered is None else answered)
