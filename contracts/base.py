"""Settings shared by every wire Struct, and the field types reused across contracts."""

from __future__ import annotations

from typing import Annotated

import msgspec


def anchored(body: str) -> str:
    r"""`^body$` as a pattern that refuses a trailing newline too.

    msgspec checks patterns with Python's `re.search`, where `$` also matches before a final "\n", so
    `^[a-z]+$` accepts `"appworld\n"`. `\Z` would fix that for Python but is not ECMA-262, the regex
    dialect of the JSON Schemas and the OpenAPI document generated from these types. The leading
    lookahead (no newline anywhere) reads the same in both, so every reader of the contract and the
    service agree on what matches.
    """
    return rf"^(?!.*\n){body}$"


RequestId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=200,
        description="Caller's tracing id; echoed in the response and every log line.",
    ),
]


class WireStruct(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base for every wire type, so shared settings live in one place.

    Unknown fields are refused, not ignored: a misspelled field (`max_loop`, `focus_node_id`) is a 422
    naming it rather than a request that silently runs with the default.
    """
