"""Settings shared by every wire Struct, and the field types reused across contracts."""

from __future__ import annotations

from typing import Annotated

import msgspec

PATTERN_MEANINGS: dict[str, str] = {}
"""What each anchored pattern accepts, in words, for the message of a value that does not match it."""


def anchored(body: str, means: str = "") -> str:
    r"""`^body$` as a pattern that refuses a trailing newline too.

    msgspec checks patterns with Python's `re.search`, where `$` also matches before a final "\n", so
    `^[a-z]+$` accepts `"appworld\n"`. `\Z` would fix that for Python but is not ECMA-262, the regex
    dialect of the JSON Schemas and the OpenAPI document generated from these types. The leading
    lookahead (no newline anywhere) reads the same in both, so every reader of the contract and the
    service agree on what matches. `means` says in words what matches, for the error of a value that does not.
    """
    pattern = rf"^(?!.*\n){body}$"
    if means:
        PATTERN_MEANINGS[pattern] = means
    return pattern


REQUEST_ID_MAX_CHARS = 200

REQUEST_ID_CHARS = "[!-~]"
"""Visible ASCII, no space: the id is echoed in the `X-Request-ID` response header, which carries ASCII as sent
(a control character could split the header; other characters would come back altered, and spaces at the ends
are trimmed), so an id the header could not carry intact is refused rather than echoed as another one."""

RequestId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=REQUEST_ID_MAX_CHARS,
        pattern=anchored(
            f"{REQUEST_ID_CHARS}+",
            means="visible ASCII characters without spaces (the id is echoed in the X-Request-ID header)",
        ),
        description=(
            "Caller's tracing id (1-200 visible ASCII characters, no space); echoed in the response, "
            "its X-Request-ID header and every log line."
        ),
    ),
]


class WireStruct(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base for every wire type, so shared settings live in one place.

    Unknown fields are refused, not ignored: a misspelled field (`max_loop`, `focus_node_id`) is a 422
    naming it rather than a request that silently runs with the default.
    """
