"""What decoding a request body costs in-process: msgspec's typed decode and the duplicate-key check after it.

Every JSON request is decoded strictly into its contract type (msgspec), then parsed once more by
`librarian_svc.json_duplicate_keys` to refuse a key given twice in one object, which msgspec keeps
silently. This prints both, per benchmark body, as the fastest of `--rounds` repeats of `--runs` calls
(the minimum, because on a shared VM every other statistic mostly measures the neighbours):

- `librarian`: the 161 KB three-round step of `bench.librarian_throughput`;
- `grace`: the 40-hit search result of `bench.grace_throughput` (its state token stood in by a string of the
  same length, since a real one needs a running service: the token is one string either way);
- `organizer`, `advisor`, `validate`: the 200-node dashboard bodies of `bench.proposal_quality_throughput`.

    python -m bench.request_decode [--runs 300] [--rounds 9] [--output FILE]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from bench import grace_throughput, librarian_throughput
from bench import proposal_quality_throughput as proposals
from bench.tools import emit_in_process
from contracts.grace import GraceRequest
from contracts.librarian import LibrarianRequest
from contracts.proposal_quality import ProposalRunRequest, ProposalValidateRequest
from librarian_svc.json_duplicate_keys import duplicate_key_paths

MODULE = "bench.request_decode"
ASKS = "CPU per request body in-process: msgspec's typed decode, and the duplicate-key check after it"
STATE_TOKEN_CHARS = 700
"""About the length of the GRACE state token a first call gives (one JSON string either way)."""


def bodies() -> dict[str, tuple[bytes, type[Any]]]:
    """Each benchmark's body and the contract type the service decodes it into."""
    _, hits = grace_throughput.ranked_hits(0, 300)
    grace = msgspec.json.encode(
        {
            "request_id": "bench-grace-1",
            "state": "v1." + "A" * STATE_TOKEN_CHARS + ".signature",
            "tool_result": {"step_id": 1, "hits": hits},
        }
    )
    run_bodies = proposals.payloads()
    return {
        "librarian": (librarian_throughput.build_payload()[0], LibrarianRequest),
        "grace": (grace, GraceRequest),
        **{
            name: (body, ProposalValidateRequest if name == "validate" else ProposalRunRequest)
            for name, body in run_bodies.items()
        },
    }


def fastest_us(call: Callable[[], object], runs: int, rounds: int) -> float:
    """Microseconds a call, the fastest of `rounds` repeats of `runs` calls."""
    return min(timeit.repeat(call, number=runs, repeat=rounds)) / runs * 1e6


def measure(runs: int, rounds: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, (body, request_type) in bodies().items():
        decoder = msgspec.json.Decoder(request_type)
        n = max(1, runs // 10) if len(body) > 100_000 else runs
        typed = fastest_us(lambda: decoder.decode(body), n, rounds)  # noqa: B023 (called before the next body)
        check = fastest_us(lambda: duplicate_key_paths(body.decode("utf-8")), n, rounds)  # noqa: B023
        figures[name] = {
            "bytes": len(body),
            "typed_decode_us": round(typed, 1),
            "duplicate_key_check_us": round(check, 1),
            "ratio_check_over_decode": round(check / typed, 2),
        }
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    emit_in_process(MODULE, ASKS, argv or [], args, measure(args.runs, args.rounds))


if __name__ == "__main__":
    main(sys.argv[1:])
