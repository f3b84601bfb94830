"""Seed 000 properties 1–2 and seed 001 properties 1–2 on the msgspec contracts, plus the derived score."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.ace import (
    AceCurateRequest,
    Bullet,
    BulletEvaluation,
    DeltaContextItem,
    Insight,
    Playbook,
    ReflectionResult,
    SearchQuery,
    SearchResult,
    confidence,
)
from tests.graphs.ace.strategies import (
    bullets,
    counters,
    deltas,
    playbooks,
    reflections,
    search_queries,
    search_results,
)

MODELS: list[tuple[type[Any], st.SearchStrategy[Any]]] = [
    (Bullet, bullets()),
    (Playbook, playbooks()),
    (DeltaContextItem, deltas),
    (SearchQuery, search_queries),
    (SearchResult, search_results),
]


# Feature: self-reflection-system, Property 1: every field of a model keeps the value it was given
@pytest.mark.parametrize(("model", "strategy"), MODELS, ids=[m.__name__ for m, _ in MODELS])
def test_models_keep_their_field_values(model: type[Any], strategy: st.SearchStrategy[Any]) -> None:
    @settings(max_examples=100, deadline=None)
    @given(strategy)
    def check(value: Any) -> None:
        fields = msgspec.structs.asdict(value)
        rebuilt = msgspec.convert(msgspec.to_builtins(value), model)
        assert msgspec.structs.asdict(rebuilt) == fields
        for name, given_value in fields.items():
            assert getattr(rebuilt, name) == given_value
        assert msgspec.json.decode(msgspec.json.encode(value), type=model) == value

    check()


# Feature: self-reflection-system, Property 2: confidence_score = helpful / (helpful + harmful), 0.5 when unvoted
@settings(max_examples=100)
@given(helpful=counters, harmful=counters, claimed=st.floats(allow_nan=False, allow_infinity=False))
def test_confidence_score_is_computed_and_cannot_be_forged(helpful: int, harmful: int, claimed: float) -> None:
    expected = 0.5 if helpful + harmful == 0 else helpful / (helpful + harmful)
    built = Bullet(id="b-00001", section="s", content="c", helpful=helpful, harmful=harmful, confidence_score=claimed)
    sent = {"id": "b-00001", "section": "s", "content": "c", "helpful": helpful, "harmful": harmful}
    decoded = msgspec.json.decode(msgspec.json.encode(sent | {"confidence_score": claimed}), type=Bullet)
    assert built.confidence_score == decoded.confidence_score == confidence(helpful, harmful) == expected
    assert msgspec.to_builtins(decoded)["confidence_score"] == expected  # present in the JSON output
    bumped = msgspec.structs.replace(decoded, helpful=helpful + 1)
    assert bumped.confidence_score == (helpful + 1) / (helpful + 1 + harmful)


@pytest.mark.parametrize("field", ["helpful", "harmful", "confidence_score"])
def test_bullet_cannot_be_mutated_behind_its_score(field: str) -> None:
    b = Bullet(id="b-00001", section="s", content="c", helpful=1)
    with pytest.raises(AttributeError):
        setattr(b, field, 5)


# Feature: reflector-agent, Property 1: ReflectionResult survives a JSON round trip
@settings(max_examples=100)
@given(reflections)
def test_reflection_result_round_trips_through_json(result: ReflectionResult) -> None:
    assert msgspec.json.decode(msgspec.json.encode(result), type=ReflectionResult) == result


VALID: dict[type[Any], dict[str, Any]] = {
    Insight: dict.fromkeys(
        ("reasoning", "error_identification", "root_cause_analysis", "correct_approach", "key_insight"), "x"
    ),
    BulletEvaluation: {"bullet_id": "b-00001", "tag": "helpful", "reason": "r"},
    ReflectionResult: {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "d"},
}
WRONG_VALUES = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), max_size=2))


# Feature: reflector-agent, Property 2: a value of the wrong type in any field is rejected
@pytest.mark.parametrize("model", list(VALID), ids=lambda m: m.__name__)
def test_wrongly_typed_fields_are_rejected(model: type[Any]) -> None:
    @settings(max_examples=100)
    @given(field=st.sampled_from(sorted(VALID[model])), wrong=WRONG_VALUES)
    def check(field: str, wrong: Any) -> None:
        if isinstance(VALID[model][field], list) and isinstance(wrong, list) and not wrong:
            return  # an empty list is a valid list
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(VALID[model] | {field: wrong}, model)

    check()


@pytest.mark.parametrize("tag", ["useful", "HELPFUL", "", "bad"])
def test_unknown_evaluation_tags_are_rejected(tag: str) -> None:
    with pytest.raises(msgspec.ValidationError, match="tag"):
        msgspec.convert(VALID[BulletEvaluation] | {"tag": tag}, BulletEvaluation)


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("helpful", -1, "$.helpful"),
        ("harmful", -5, "$.harmful"),
        ("id", "../etc", "$.id"),
        ("id", "has space", "$.id"),
        ("content", "", "$.content"),
        ("section", "a\nb", "$.section"),
    ],
)
def test_bullet_constraints_name_the_field(field: str, value: Any, where: str) -> None:
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert({"id": "b-00001", "section": "s", "content": "c", field: value}, Bullet)
    assert str(raised.value).endswith(f"at `{where}`")


def test_curate_request_rejects_an_invalid_dataset_name() -> None:
    body = {
        "reflection": VALID[ReflectionResult],
        "playbook": {},
        "dataset": "../../etc/passwd",
    }
    with pytest.raises(msgspec.ValidationError, match="dataset"):
        msgspec.convert(body, AceCurateRequest)
