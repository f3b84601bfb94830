"""Read a state token while debugging: `python -m librarian_svc.state inspect TOKEN` (or `-` for stdin).

The keys come from the environment exactly as the service reads them (`STATE_SIGNING_KEYS`, or the
`STATE_SIGNING_KEY` alias), so only someone who holds the keys can read a token, and a token that
fails verification is reported, never shown.
"""

from __future__ import annotations

import argparse
import datetime
import sys

import msgspec

from graphs.errors import InvalidInput
from graphs.llm.config import ConfigError
from librarian_svc.settings import load_state_settings
from librarian_svc.state.token import StateCodec


def _when(epoch: int | None) -> str | None:
    return None if epoch is None else datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat()


def main(argv: list[str] | None = None) -> int:
    """Verify the token with the configured keys and print what it holds as JSON; exit 1 if it fails."""
    parser = argparse.ArgumentParser(prog="python -m librarian_svc.state", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", help="verify a token and print its contents as JSON")
    inspect.add_argument("token", help="the token, or - to read it from standard input")
    args = parser.parse_args(argv)
    token = sys.stdin.read().strip() if args.token == "-" else args.token.strip()  # noqa: S105 - not a secret
    try:
        state = load_state_settings()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    if not state.keys:
        print(
            "no STATE_SIGNING_KEYS in the environment: a token signed by a running service cannot be read",
            file=sys.stderr,
        )
        return 2
    codec = StateCodec(keys=state.keys, max_state_bytes=state.max_state_bytes)
    try:
        contents = codec.read(token, now=0)  # show expired tokens too: say when they expired instead
    except InvalidInput as exc:
        print(f"invalid token: {exc.message}", file=sys.stderr)
        return 1
    report = {
        "agent": contents.a,
        "schema_version": contents.v,
        "issued_at": _when(contents.iat),
        "expires_at": _when(contents.exp),
        "state": contents.d,
    }
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(report)).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
