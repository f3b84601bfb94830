"""The envelope an agent's state travels in between calls.

The client treats it as opaque and returns it verbatim. The service checks the version, the
size and (when a signing key is configured) the HMAC signature before it trusts any field
of `data`, whose shape each agent defines in its own contracts module.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from contracts.base import WireStruct

AgentName = Annotated[str, msgspec.Meta(pattern=r"^[a-z_]{1,32}$")]


class StateEnvelope(WireStruct):
    """Versioned, optionally signed agent state.

    `signature` is an HMAC-SHA256 (hex) over the agent name, the version and a canonical
    encoding of `data`, so a client that re-serialises the JSON (key order, whitespace,
    number spelling) does not break it, while any change to a value does.
    """

    schema_version: int
    agent: AgentName
    data: dict[str, Any]
    signature: str | None = None
