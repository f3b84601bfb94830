"""State tokens: opaque, always signed, rotatable, expiring, bounded (issue 11 item 3), property-tested."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import zlib
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.state import STATE_TOKEN_PATTERN
from graphs.errors import InvalidInput
from librarian_svc.state.token import StateCodec, StateNotIssued

KEY_A = b"a" * 32
KEY_B = b"b" * 32


class DemoState(msgspec.Struct):
    counter: int
    notes: list[str]
    scores: dict[str, float]


states = st.builds(
    DemoState,
    counter=st.integers(min_value=-(2**53), max_value=2**53),
    notes=st.lists(st.text(max_size=30), max_size=5),
    scores=st.dictionaries(st.text(max_size=10), st.floats(allow_nan=False, allow_infinity=False), max_size=5),
)


def _codec(*keys: bytes, max_state_bytes: int = 1 << 20, ttl_s: int | None = None) -> StateCodec:
    return StateCodec(keys=list(keys) or [KEY_A], max_state_bytes=max_state_bytes, ttl_s=ttl_s)


def _open(codec: StateCodec, token: str) -> DemoState:
    return codec.open(token, agent="demo", schema_version=1, state_type=DemoState)


@settings(max_examples=100)
@given(state=states, sort_keys=st.booleans(), indent=st.sampled_from([None, 2]))
def test_a_token_survives_any_json_reencoding_of_the_body_around_it(
    state: DemoState, sort_keys: bool, indent: int | None
) -> None:
    codec = _codec()
    body = {"state": codec.seal(state, agent="demo", schema_version=1), "n": 0.0}
    again = json.loads(json.dumps(json.loads(json.dumps(body)), sort_keys=sort_keys, indent=indent))
    assert _open(codec, again["state"]) == state


@settings(max_examples=100)
@given(state=states)
def test_a_token_is_url_safe_and_matches_the_published_pattern(state: DemoState) -> None:
    token = _codec().seal(state, agent="demo", schema_version=1)
    assert re.fullmatch(STATE_TOKEN_PATTERN.strip("^$"), token)


@settings(max_examples=100)
@given(state=states, position=st.integers(min_value=3, max_value=10_000), char=st.sampled_from("AQw-_9"))
def test_any_changed_character_is_refused(state: DemoState, position: int, char: str) -> None:
    codec = _codec()
    token = codec.seal(state, agent="demo", schema_version=1)
    index = position % len(token)
    if token[index] in ".v1" or token[index] == char:
        return
    edited = token[:index] + char + token[index + 1 :]
    with pytest.raises(InvalidInput):
        _open(codec, edited)


def test_the_signature_is_accepted_in_one_spelling_only() -> None:
    """Unpadded base64's last character carries bits the decoder drops: a second spelling would decode the same."""
    codec = _codec()
    token = codec.seal(DemoState(counter=1, notes=[], scores={}), agent="demo", schema_version=1)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(token[-1])
    same_bytes = [c for c in alphabet if c != token[-1] and alphabet.index(c) >> 2 == last >> 2]
    assert same_bytes  # a 32-byte HMAC leaves 2 bits of its last character unused
    for spelling in same_bytes:
        with pytest.raises(InvalidInput, match="base64url"):
            _open(codec, token[:-1] + spelling)


def _resigned_with_edit(token: str, key: bytes, edit: Callable[[dict[str, Any]], None]) -> str:
    """What an attacker without the key cannot do, done with the key: proves the checks after the signature."""
    payload = token.split(".")[1]
    contents = json.loads(zlib.decompress(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    edit(contents)
    raw = base64.urlsafe_b64encode(zlib.compress(json.dumps(contents).encode())).rstrip(b"=")
    signed = b"v1." + raw
    signature = base64.urlsafe_b64encode(hmac.new(key, signed, hashlib.sha256).digest()).rstrip(b"=")
    return (signed + b"." + signature).decode()


def test_an_edited_payload_without_the_key_is_refused() -> None:
    codec = _codec()
    token = codec.seal(DemoState(counter=1, notes=[], scores={}), agent="demo", schema_version=1)
    forged = _resigned_with_edit(token, b"z" * 32, lambda c: c["d"].update(counter=99))
    with pytest.raises(InvalidInput, match="signature does not match"):
        _open(codec, forged)


def test_rotation_the_first_key_signs_and_every_key_verifies() -> None:
    state = DemoState(counter=7, notes=["x"], scores={"s": 0.0})
    old = _codec(KEY_A).seal(state, agent="demo", schema_version=1)
    rotated = _codec(KEY_B, KEY_A)
    assert _open(rotated, old) == state
    new = rotated.seal(state, agent="demo", schema_version=1)
    assert _open(_codec(KEY_B), new) == state
    with pytest.raises(InvalidInput, match="signature"):
        _open(_codec(KEY_A), new)


def test_expired_tokens_are_refused() -> None:
    codec = _codec(ttl_s=60)
    token = codec.seal(DemoState(counter=1, notes=[], scores={}), agent="demo", schema_version=1, now=1_000)
    assert codec.read(token, now=1_059).d["counter"] == 1
    with pytest.raises(InvalidInput, match="expired"):
        codec.read(token, now=1_061)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(lambda c: c.update(v=2), "schema version 2", id="unknown-version"),
        pytest.param(lambda c: c.update(a="grace"), "belongs to agent", id="other-agent"),
        pytest.param(lambda c: c["d"].update(counter="seven"), "does not match", id="wrong-shape"),
    ],
)
def test_checks_after_the_signature(edit: Callable[[dict[str, Any]], None], message: str) -> None:
    codec = _codec()
    token = codec.seal(DemoState(counter=1, notes=["a"], scores={"x": 0.5}), agent="demo", schema_version=1)
    with pytest.raises(InvalidInput, match=message):
        _open(codec, _resigned_with_edit(token, KEY_A, edit))


@pytest.mark.parametrize(
    "token",
    ["", "v1", "v1..", "v2.abc.def", "v1.abc", "v1.abc.def\n", "v1.a b.c", '{"schema_version": 1}', "v1.é.x"],
)
def test_malformed_tokens_are_invalid_input(token: str) -> None:
    with pytest.raises(InvalidInput):
        _open(_codec(), token)


def test_oversized_tokens_are_refused_before_any_work() -> None:
    codec = _codec(max_state_bytes=2048)
    token = codec.seal(DemoState(counter=1, notes=["x" * 5000], scores={}), agent="demo", schema_version=1)
    assert len(token) < 2048  # compressible: the payload is small on the wire
    with pytest.raises(InvalidInput, match="limit"):
        _open(codec, "v1." + "A" * 3000 + "." + "B" * 43)
    assert _open(codec, token).notes == ["x" * 5000]


class BoundedState(msgspec.Struct):
    note: Annotated[str, msgspec.Meta(max_length=10)]


def test_a_state_outside_its_own_schema_is_not_issued() -> None:
    """`open` would refuse it (the probe's GRACE state with a 10,170-character description): seal refuses first."""
    codec = _codec()
    with pytest.raises(StateNotIssued, match=r"does not match the demo state schema: .*<= 10 - at `\$.note`"):
        codec.seal(BoundedState(note="x" * 11), agent="demo", schema_version=1)
    token = codec.seal(BoundedState(note="x" * 10), agent="demo", schema_version=1)
    assert codec.open(token, agent="demo", schema_version=1, state_type=BoundedState).note == "x" * 10


@pytest.mark.parametrize(
    ("notes", "limit"),
    [
        pytest.param(
            [str(i) * 3 + hashlib.sha256(str(i).encode()).hexdigest() for i in range(60)], "MAX_STATE_BYTES", id="token"
        ),
        pytest.param(["x" * 20_000], "once decompressed", id="payload"),
    ],
)
def test_a_state_over_the_size_limits_is_not_issued(notes: list[str], limit: str) -> None:
    """Every state `seal` hands out is one `read` takes back: the token's bytes and the payload's, the same limits."""
    codec = _codec(max_state_bytes=2048)
    with pytest.raises(StateNotIssued, match=limit):
        codec.seal(DemoState(counter=1, notes=notes, scores={}), agent="demo", schema_version=1)


@settings(max_examples=50)
@given(state=states, max_state_bytes=st.integers(min_value=64, max_value=4096))
def test_every_token_sealed_opens_and_only_a_state_over_the_limits_is_refused(
    state: DemoState, max_state_bytes: int
) -> None:
    codec = _codec(max_state_bytes=max_state_bytes)
    try:
        token = codec.seal(state, agent="demo", schema_version=1)
    except StateNotIssued:
        # Refused: under a limit that binds nothing, the same state makes a token over this limit, or a payload
        # over 8 times it (the token's envelope, agent, version and times, is under 200 bytes of that payload).
        unbounded = _codec(max_state_bytes=1 << 30).seal(state, agent="demo", schema_version=1)
        assert len(unbounded) > max_state_bytes or len(msgspec.json.encode(state)) > 8 * max_state_bytes - 200
        return
    assert _open(codec, token) == state


@given(state=states)
def test_every_state_seals_and_opens_when_the_limit_binds_nothing(state: DemoState) -> None:
    codec = _codec(max_state_bytes=1 << 30)
    assert _open(codec, codec.seal(state, agent="demo", schema_version=1)) == state


def test_a_decompression_bomb_is_refused_even_when_signed() -> None:
    codec = _codec(max_state_bytes=32_768)
    token = codec.seal(DemoState(counter=1, notes=[], scores={}), agent="demo", schema_version=1)
    bomb = _resigned_with_edit(token, KEY_A, lambda c: c["d"].update(notes=["x" * 10_000_000]))
    assert len(bomb) < 32_768
    with pytest.raises(InvalidInput, match="too large"):
        _open(codec, bomb)
