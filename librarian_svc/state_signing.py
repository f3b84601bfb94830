"""Seal agent state into a `StateEnvelope` for the client, and open it again on the way back.

State is the only memory the service has between calls, and it comes back from the client,
so it is treated as hostile: version, size and (with `STATE_SIGNING_KEY`) an HMAC signature
are checked before any field is trusted. The signature covers a canonical encoding of the
data (sorted keys, msgspec's number spelling), so a client that re-serialises the JSON does
not break it while any changed value does.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, TypeVar

import msgspec

from contracts.common import ErrorDetail
from contracts.state import StateEnvelope
from graphs.errors import InvalidInput

S = TypeVar("S")

_canonical_encoder = msgspec.json.Encoder(order="sorted")


def canonical_bytes(agent: str, schema_version: int, data: Any) -> bytes:
    """The bytes the signature covers: agent, version and canonical data."""
    return b"%s\x00%d\x00%s" % (agent.encode(), schema_version, _canonical_encoder.encode(data))


class StateCodec:
    """Turns typed agent state into envelopes and back, enforcing version, size and signature."""

    def __init__(self, *, signing_key: bytes | None, max_state_bytes: int) -> None:
        self._key = signing_key
        self.max_state_bytes = max_state_bytes

    @property
    def signing(self) -> bool:
        """Whether envelopes are signed and signatures required."""
        return self._key is not None

    def _sign(self, payload: bytes) -> str:
        assert self._key is not None
        return hmac.new(self._key, payload, hashlib.sha256).hexdigest()

    def seal(self, state: msgspec.Struct, *, agent: str, schema_version: int) -> StateEnvelope:
        """Wrap (and sign) a typed state for the response."""
        data = msgspec.to_builtins(state)
        signature = self._sign(canonical_bytes(agent, schema_version, data)) if self._key else None
        return StateEnvelope(schema_version=schema_version, agent=agent, data=data, signature=signature)

    def open(self, envelope: StateEnvelope, *, agent: str, schema_version: int, state_type: type[S]) -> S:
        """Check an envelope from a request and decode its data; raise `InvalidInput` if it cannot be trusted."""
        if envelope.agent != agent:
            raise InvalidInput(
                f"state belongs to agent {envelope.agent!r}, not {agent!r}",
                [ErrorDetail(path="$.state.agent", message=f"expected {agent!r}")],
            )
        if envelope.schema_version != schema_version:
            raise InvalidInput(
                f"state schema_version {envelope.schema_version} is not supported (expected {schema_version})",
                [ErrorDetail(path="$.state.schema_version", message=f"expected {schema_version}")],
            )
        payload = canonical_bytes(agent, schema_version, envelope.data)
        if len(payload) > self.max_state_bytes:
            raise InvalidInput(
                f"state is {len(payload)} bytes, over the {self.max_state_bytes}-byte limit",
                [ErrorDetail(path="$.state.data", message="too large")],
            )
        if self._key is not None:
            if not envelope.signature:
                raise InvalidInput(
                    "state is not signed", [ErrorDetail(path="$.state.signature", message="signature required")]
                )
            if not hmac.compare_digest(self._sign(payload), envelope.signature):
                raise InvalidInput(
                    "state signature does not match (state was modified or signed with another key)",
                    [ErrorDetail(path="$.state.signature", message="invalid signature")],
                )
        try:
            return msgspec.convert(envelope.data, state_type)
        except msgspec.ValidationError as exc:
            raise InvalidInput(
                f"state data does not match the {agent} state schema: {exc}",
                [ErrorDetail(path="$.state.data", message=str(exc))],
            ) from None
