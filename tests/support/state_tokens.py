"""Open and re-sign state tokens in tests, as only a holder of the signing key could.

The suite runs with `TEST_STATE_KEY` in `STATE_SIGNING_KEYS` (tests/conftest.py), so a test can play
an attacker who stole the key and check the server's own cross-checks behind the signature (defence
in depth), or an operator reading a token while debugging.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import zlib
from collections.abc import Callable
from typing import Any

TEST_STATE_KEY = "test-state-key-0123456789abcdef"

Envelope = dict[str, Any]
"""A token's contents as tests edit them: `{schema_version, agent, data}`."""


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def read_token(token: str) -> Envelope:
    """The token's contents (no verification: tests read only what the service issued)."""
    contents = json.loads(zlib.decompress(_unb64(token.split(".")[1])))
    return {"schema_version": contents["v"], "agent": contents["a"], "data": contents["d"], "raw": contents}


def with_state_opened(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with its state token's contents in place of the token, less when it was issued.

    The token records the second it was signed (`iat`, and `exp` from it), so two identical steps that straddle
    a second boundary get different tokens for the same state: compare these, not the tokens.
    """
    contents = read_token(answer["state"])["raw"]
    return {**answer, "state": {key: value for key, value in contents.items() if key not in ("iat", "exp")}}


def sign_contents(contents: dict[str, Any], key: str = TEST_STATE_KEY) -> str:
    """A token for these contents, signed with `key` exactly as the service signs."""
    payload = base64.urlsafe_b64encode(zlib.compress(json.dumps(contents).encode())).rstrip(b"=")
    signed = b"v1." + payload
    signature = base64.urlsafe_b64encode(hmac.new(key.encode(), signed, hashlib.sha256).digest()).rstrip(b"=")
    return (signed + b"." + signature).decode()


def edit_token(token: str, edit: Callable[[Envelope], object], key: str = TEST_STATE_KEY) -> str:
    """Apply `edit` to `{schema_version, agent, data}` and re-sign with `key` (the test key by default)."""
    envelope = read_token(token)
    edit(envelope)
    raw = dict(envelope["raw"], v=envelope["schema_version"], a=envelope["agent"], d=envelope["data"])
    return sign_contents(raw, key)
