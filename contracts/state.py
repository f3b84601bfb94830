"""The state token an agent's state travels in between calls.

On the wire, state is one opaque, URL-safe string: `v1.<payload>.<signature>`. The client stores
it and sends it back verbatim; it never parses or re-encodes it, so no JSON library on the way
(Go's `map[string]any`, a proxy that reorders keys, a float written `0`) can break it. The
service checks the prefix, the HMAC-SHA256 signature over the exact payload bytes, the agent,
the version, the expiry and the size before it trusts any field of the state inside, whose shape
each agent defines in its own contracts module (`LibrarianState`, `GraceState`).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.base import anchored

STATE_TOKEN_PATTERN = anchored(
    r"v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+",
    means="a state token exactly as the service returned it (v1.<payload>.<signature>)",
)

StateToken = Annotated[
    str,
    msgspec.Meta(
        pattern=STATE_TOKEN_PATTERN,
        description="Opaque state token (`v1.<payload>.<signature>`, base64url): send it back verbatim, byte for "
        "byte; never parse or rebuild it. Its size is bounded by the service's MAX_STATE_BYTES.",
    ),
]
