"""State envelope: version, size and HMAC signature checks (issue 2 item 8), property-tested."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.state import StateEnvelope
from graphs.errors import InvalidInput
from librarian_svc.state_signing import StateCodec

KEY = b"k" * 32


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


def _open(codec: StateCodec, envelope: StateEnvelope) -> DemoState:
    return codec.open(envelope, agent="demo", schema_version=1, state_type=DemoState)


def _wire_roundtrip(envelope: StateEnvelope, *, sort_keys: bool = False, indent: int | None = None) -> StateEnvelope:
    """What a client does: parse the JSON and serialise it again, possibly differently."""
    text = json.dumps(json.loads(msgspec.json.encode(envelope)), sort_keys=sort_keys, indent=indent)
    return msgspec.json.decode(text, type=StateEnvelope)


@settings(max_examples=100)
@given(state=states, sort_keys=st.booleans(), indent=st.sampled_from([None, 2]))
def test_signed_state_survives_reserialisation(state: DemoState, sort_keys: bool, indent: int | None) -> None:
    codec = StateCodec(signing_key=KEY, max_state_bytes=1 << 20)
    envelope = _wire_roundtrip(codec.seal(state, agent="demo", schema_version=1), sort_keys=sort_keys, indent=indent)
    assert _open(codec, envelope) == state


@settings(max_examples=100)
@given(state=states, delta=st.integers(min_value=1, max_value=1000))
def test_any_changed_value_breaks_the_signature(state: DemoState, delta: int) -> None:
    codec = StateCodec(signing_key=KEY, max_state_bytes=1 << 20)
    envelope = codec.seal(state, agent="demo", schema_version=1)
    envelope.data["counter"] += delta
    with pytest.raises(InvalidInput, match="signature"):
        _open(codec, envelope)


@settings(max_examples=100)
@given(state=states)
def test_unsigned_or_foreign_key_state_is_rejected_when_signing(state: DemoState) -> None:
    signer = StateCodec(signing_key=KEY, max_state_bytes=1 << 20)
    unsigned = StateCodec(signing_key=None, max_state_bytes=1 << 20).seal(state, agent="demo", schema_version=1)
    assert unsigned.signature is None
    with pytest.raises(InvalidInput, match="not signed"):
        _open(signer, unsigned)
    foreign = StateCodec(signing_key=b"x" * 32, max_state_bytes=1 << 20).seal(state, agent="demo", schema_version=1)
    with pytest.raises(InvalidInput, match="signature"):
        _open(signer, foreign)


def test_without_a_key_state_is_accepted_unsigned() -> None:
    codec = StateCodec(signing_key=None, max_state_bytes=1 << 20)
    state = DemoState(counter=1, notes=[], scores={})
    assert _open(codec, codec.seal(state, agent="demo", schema_version=1)) == state


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(lambda e: setattr(e, "schema_version", 2), "schema_version 2", id="unknown-version"),
        pytest.param(lambda e: setattr(e, "agent", "grace"), "belongs to agent", id="other-agent"),
        pytest.param(lambda e: e.data.update(counter="seven"), "does not match", id="wrong-shape"),
        pytest.param(lambda e: e.data.update(notes=["x" * 5000]), "limit", id="oversized"),
    ],
)
def test_untrustworthy_envelopes_are_invalid_input(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    codec = StateCodec(signing_key=None, max_state_bytes=4096)
    envelope = codec.seal(DemoState(counter=1, notes=["a"], scores={"x": 0.5}), agent="demo", schema_version=1)
    mutate(envelope)
    with pytest.raises(InvalidInput, match=message):
        _open(codec, envelope)


def test_signature_covers_the_version_and_agent() -> None:
    codec = StateCodec(signing_key=KEY, max_state_bytes=1 << 20)
    envelope = codec.seal(DemoState(counter=1, notes=[], scores={}), agent="demo", schema_version=1)
    with pytest.raises(InvalidInput):
        codec.open(envelope, agent="other", schema_version=1, state_type=DemoState)
    forged = msgspec.structs.replace(envelope, schema_version=2)
    with pytest.raises(InvalidInput):
        codec.open(forged, agent="demo", schema_version=2, state_type=DemoState)
