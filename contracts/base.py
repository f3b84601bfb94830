"""Settings shared by every wire Struct, and the field types reused across contracts."""

from __future__ import annotations

from typing import Annotated

import msgspec

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
