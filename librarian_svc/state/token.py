"""Seal typed agent state into an opaque token for the client, and open it again on the way back.

State is the only memory the service has between calls, and it comes back from the client, so it
is treated as hostile. The token is `v1.<payload>.<signature>`, both parts base64url without
padding: the payload is zlib-compressed JSON `{a: agent, v: version, iat, exp?, d: state}`, the
signature an HMAC-SHA256 over the exact ASCII bytes `v1.<payload>`. Signing the bytes as sent
(not a re-encoding of the data) means nothing a client's JSON library does can break a token it
passes back verbatim, and any change to it is refused.

Every token is signed. The first of `STATE_SIGNING_KEYS` signs and every one verifies, so keys
rotate without breaking sessions in flight; with no key configured the process makes an
ephemeral one (states then only work on this process, which start-up says loudly).

Sealing holds a state to the limits opening it enforces on every agent's state (the token's size, its
size once decompressed, the state type's schema): a state that breaks them is never handed out
(`StateNotIssued`), so a session cannot be broken by its own last response. The schema is checked on the
values as built, not on their JSON: a float JSON cannot carry (NaN, infinity; no state holds one) would
pass here and be refused when it came back. An agent's own checks of a state it opens (its protocol) are
that agent's to keep.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
import zlib
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from contracts.common import ErrorDetail
from graphs.errors import InvalidInput

S = TypeVar("S")

VERSION_PREFIX = b"v1."
_TOKEN = re.compile(rb"v1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})")
_STATE_PATH = "$.state"


class TokenContents(msgspec.Struct, kw_only=True):
    """What a token carries once its signature checked out (the JSON inside the payload)."""

    a: str
    v: int
    iat: int
    exp: int | None = None
    d: dict[str, Any]


COMPRESSION_LEVEL = 1
"""zlib's fastest level. Every stateful step seals its next state, so this is CPU on every request: on
the GRACE benchmark's 40-hit step (7.7 KB of JSON) level 1 takes 56 µs against 132 µs at the default
6, for a payload 8 % larger (3,268 against 3,010 bytes), far inside `MAX_STATE_BYTES`. Reading a token
back costs the same at either level."""

_contents_decoder = msgspec.json.Decoder(TokenContents)
_encoder = msgspec.json.Encoder()


def _b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


def _unb64(text: bytes) -> bytes:
    return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))


def _refuse(message: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(path=_STATE_PATH, message=message)])


class StateNotIssued(Exception):
    """The next state breaks a limit `open` enforces, so it was not sealed: the caller could never send it back.

    Not the caller's mistake: the step it asked for produced a state the service cannot carry (over
    `MAX_STATE_BYTES`, or outside its own schema). The request runner answers it with an ERROR that
    carries the request's own state, which is still good.
    """


class StateCodec:
    """Turns typed agent state into signed tokens and back, enforcing signature, agent, version, expiry and size."""

    def __init__(self, *, keys: Sequence[bytes], max_state_bytes: int, ttl_s: int | None = None) -> None:
        if not keys:
            raise ValueError("a StateCodec needs at least one key")
        self._keys = list(keys)
        self.max_state_bytes = max_state_bytes
        self.ttl_s = ttl_s

    def _sign(self, key: bytes, signed: bytes) -> bytes:
        return hmac.new(key, signed, hashlib.sha256).digest()

    def seal(self, state: msgspec.Struct, *, agent: str, schema_version: int, now: float | None = None) -> str:
        """The token for `state`, signed with the first key, once `state` is known to pass `open`'s limits.

        Raises:
            StateNotIssued: `open` would refuse the state: its token or its payload is over the size
                limits, or it does not match its own type's schema (a field over its declared length).
        """
        issued = int(time.time() if now is None else now)
        data = msgspec.to_builtins(state)
        try:
            msgspec.convert(data, type(state))  # what `open` does with it; a few µs against the compression
        except msgspec.ValidationError as exc:
            raise StateNotIssued(f"the next state does not match the {agent} state schema: {exc}") from None
        contents = TokenContents(
            a=agent,
            v=schema_version,
            iat=issued,
            exp=issued + self.ttl_s if self.ttl_s else None,
            d=data,
        )
        payload = _encoder.encode(contents)
        if len(payload) > self._max_payload_bytes:
            raise StateNotIssued(f"the next state is {len(payload):,} bytes of JSON, {self._too_large_once_inflated}")
        signed = VERSION_PREFIX + _b64(zlib.compress(payload, COMPRESSION_LEVEL))
        token = (signed + b"." + _b64(self._sign(self._keys[0], signed))).decode("ascii")
        problem = self._size_problem(token)
        if problem is not None:
            raise StateNotIssued(f"the next {problem}")
        return token

    @property
    def _max_payload_bytes(self) -> int:
        """The most JSON a token may inflate to (a bound on the work a leaked key could cause, see `_decode`)."""
        return self.max_state_bytes * 8

    @property
    def _too_large_once_inflated(self) -> str:
        """How seal and `_decode` name that limit, so an operator finds it whichever side refused."""
        return f"over the {self._max_payload_bytes:,}-byte limit once decompressed (8 × MAX_STATE_BYTES)"

    def _size_problem(self, token: str) -> str | None:
        """What is wrong with the token's size (`state is N bytes, over …`), or None: one limit for read and seal."""
        if len(token) <= self.max_state_bytes:
            return None
        return f"state is {len(token)} bytes, over the {self.max_state_bytes}-byte limit (MAX_STATE_BYTES)"

    def read(self, token: str, *, now: float | None = None) -> TokenContents:
        """Verify a token and return its contents, whatever agent it belongs to (for `open` and debugging).

        Raises:
            InvalidInput: The token is malformed, too large, not signed by any configured key, or expired.
        """
        problem = self._size_problem(token)
        if problem is not None:
            raise _refuse(problem)
        raw = token.encode("ascii", "replace")
        match = _TOKEN.fullmatch(raw)
        if match is None:
            raise _refuse("state is not a state token this service issued (expected v1.<payload>.<signature>)")
        signed = raw[: match.start(2) - 1]
        try:
            signature = _unb64(match.group(2))
        except (binascii.Error, ValueError):
            raise _refuse("state signature is not valid base64url") from None
        # The last character of unpadded base64 carries bits the decoder drops: two spellings of one
        # signature would both verify. Only the one this service wrote is the token.
        if _b64(signature) != match.group(2):
            raise _refuse("state signature is not valid base64url")
        if not any(hmac.compare_digest(self._sign(key, signed), signature) for key in self._keys):
            raise _refuse(
                "state signature does not match: the token was modified, or signed with a key this service "
                "does not have (send the state back verbatim; instances must share STATE_SIGNING_KEYS)"
            )
        contents = self._decode(match.group(1))
        if contents.exp is not None and (time.time() if now is None else now) > contents.exp:
            raise _refuse("state has expired (STATE_TTL_S); start the session again")
        return contents

    def _decode(self, payload_b64: bytes) -> TokenContents:
        # Signed by us, so well formed; still bounded, so a leaked key cannot make a decompression bomb.
        try:
            inflater = zlib.decompressobj()
            payload = inflater.decompress(_unb64(payload_b64), self._max_payload_bytes)
            if inflater.unconsumed_tail:
                raise _refuse(f"state is too large: {self._too_large_once_inflated}")
            return _contents_decoder.decode(payload)
        except (zlib.error, binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
            raise _refuse("state payload is unreadable") from None

    def open(self, token: str, *, agent: str, schema_version: int, state_type: type[S]) -> S:
        """Check a token from a request and decode the agent's state; raise `InvalidInput` if it cannot be trusted."""
        contents = self.read(token)
        if contents.a != agent:
            raise _refuse(f"state belongs to agent {contents.a!r}, not {agent!r}")
        if contents.v != schema_version:
            raise _refuse(f"state schema version {contents.v} is not supported (expected {schema_version})")
        try:
            return msgspec.convert(contents.d, state_type)
        except msgspec.ValidationError as exc:
            raise _refuse(f"state does not match the {agent} state schema: {exc}") from None
