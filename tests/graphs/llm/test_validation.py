"""`collect_errors` lists every schema violation, and agrees with `msgspec.convert` on what is valid."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphs.llm.validation import collect_errors, schema_errors


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


Query = Annotated[str, msgspec.Meta(min_length=1, max_length=20)]


class Search(msgspec.Struct, tag="search", tag_field="kind", forbid_unknown_fields=True):
    queries: Annotated[list[Query], msgspec.Meta(min_length=1, max_length=3)]


class Finish(msgspec.Struct, tag="finish", tag_field="kind"):
    answer: str
    score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 1.0


class Step(msgspec.Struct, rename="camel"):
    step_id: Annotated[str, msgspec.Meta(pattern=r"^s\d+$")]
    depends_on: list[str] = []
    retries: Annotated[int, msgspec.Meta(ge=0, lt=5)] = 0
    color: Color | None = None
    priority: Priority = Priority.LOW
    mode: Literal["fast", "slow"] = "fast"
    weights: dict[str, float] = {}
    pair: tuple[int, str] | None = None
    extra: Any = None


class Plan(msgspec.Struct):
    summary: str
    steps: list[Step]
    action: Search | Finish
    tags: set[str] = set()
    confidence: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.5
    done: bool = False
    created: datetime.date | None = None
    note: Annotated[str, msgspec.Meta(description="free text")] | None = None


VALID: dict[str, Any] = {
    "summary": "plan",
    "steps": [{"stepId": "s1"}, {"stepId": "s2", "dependsOn": ["s1"], "weights": {"a": 1}}],
    "action": {"kind": "finish", "answer": "done"},
}


def _convert_ok(obj: object, tp: Any) -> bool:
    try:
        msgspec.convert(obj, tp)
    except msgspec.ValidationError:
        return False
    return True


def _with(**changes: Any) -> dict[str, Any]:
    return VALID | changes


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(VALID, [], id="valid"),
        pytest.param(
            _with(steps=[{"stepId": "s1"}, {"stepId": "s2"}, {"stepId": "s3", "dependsOn": "s1"}]),
            ["$.steps[2].dependsOn: expected array, got string"],
            id="spec-example-path",
        ),
        pytest.param(
            {"steps": "none", "action": {"kind": "finish"}, "confidence": 1.5, "done": "yes"},
            [
                "$.summary: required field missing",
                "$.steps: expected array, got string",
                "$.action.answer: required field missing",
                "$.confidence: must be <= 1.0",
                "$.done: expected boolean, got string",
            ],
            id="every-error-not-just-the-first",
        ),
        pytest.param(
            _with(steps=[{"step_id": "s1", "retries": 5, "color": "green", "priority": 3, "mode": "medium"}]),
            [
                "$.steps[0].stepId: required field missing",
                "$.steps[0].retries: must be < 5",
                '$.steps[0].color: must be one of "red", "blue"',
                "$.steps[0].priority: must be one of 1, 2",
                '$.steps[0].mode: must be one of "fast", "slow"',
            ],
            id="renamed-field-bounds-enum-literal",
        ),
        pytest.param(
            _with(steps=[{"stepId": "x1", "retries": 1.0, "weights": {"a": "heavy"}, "pair": [1, 2, 3]}]),
            [
                "$.steps[0].stepId: must match the pattern '^s\\\\d+$'",
                "$.steps[0].retries: expected integer, got number",
                "$.steps[0].weights.a: expected number, got string",
                "$.steps[0].pair: must have exactly 2 items, got 3",
            ],
            id="pattern-int-vs-float-dict-values-tuple",
        ),
        pytest.param(
            _with(action={"kind": "search", "queries": [], "limit": 3}),
            ["$.action.queries: must have at least 1 items", "$.action.limit: unknown field"],
            id="tagged-union-member-forbids-unknown-fields",
        ),
        pytest.param(
            _with(action={"kind": "search", "queries": ["", "x" * 21]}),
            [
                "$.action.queries[0]: must be at least 1 characters long",
                "$.action.queries[1]: must be at most 20 characters long",
            ],
            id="string-lengths",
        ),
        pytest.param(
            _with(action={"kind": "browse"}), ['$.action.kind: must be one of "search", "finish"'], id="unknown-tag"
        ),
        pytest.param(_with(action={"answer": "x"}), ["$.action.kind: required field missing"], id="missing-tag"),
        pytest.param(_with(action=["finish"]), ["$.action: expected object, got array"], id="union-kind"),
        pytest.param(_with(confidence=True), ["$.confidence: expected number, got boolean"], id="bool-is-not-a-number"),
        pytest.param(_with(confidence=0), ["$.confidence: must be > 0.0"], id="gt"),
        pytest.param(_with(created="yesterday"), ["$.created: invalid RFC3339 encoded date"], id="date"),
        pytest.param(_with(note=7), ["$.note: expected string or null, got integer"], id="optional-annotated"),
        pytest.param(_with(tags=["a", 1]), ["$.tags[1]: expected string, got integer"], id="set"),
        pytest.param([], ["$: expected object, got array"], id="top-level-kind"),
        pytest.param(None, ["$: expected object, got null"], id="null"),
    ],
)
def test_collect_errors_lists_every_problem_with_its_path(obj: object, expected: list[str]) -> None:
    assert collect_errors(obj, Plan) == expected
    assert _convert_ok(obj, Plan) == (expected == [])


@pytest.mark.parametrize(
    ("obj", "tp", "expected"),
    [
        ({"a b": "x"}, dict[str, int], ['$["a b"]: expected integer, got string']),
        ({"1": 1}, dict[int, int], ['$["1"] (key): expected integer, got string']),
        ([1, "x"], list[int], ["$[1]: expected integer, got string"]),
        (1, int | str, []),
        ("x", int | None, ["$: expected integer or null, got string"]),
        (1.5, int | float, []),
        ({"x": 1}, Any, []),
        (None, None, []),
        (0, None, ["$: expected null, got integer"]),
    ],
)
def test_collect_errors_on_plain_types(obj: object, tp: Any, expected: list[str]) -> None:
    assert collect_errors(obj, tp) == expected


def test_types_the_walk_skips_are_still_confirmed_by_msgspec() -> None:
    errors = collect_errors({"x": 1}, dict[str, msgspec.msgpack.Ext])
    assert schema_errors({"x": 1}, dict[str, msgspec.msgpack.Ext]) == []
    assert len(errors) == 1
    assert errors[0].startswith("$")


# --- properties -----------------------------------------------------------------------------------

_queries = st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=3)
_actions = st.builds(Search, queries=_queries) | st.builds(
    Finish, answer=st.text(max_size=10), score=st.floats(0.0, 1.0, allow_nan=False)
)
_steps = st.builds(
    Step,
    step_id=st.from_regex(r"^s\d{1,3}$", fullmatch=True),
    depends_on=st.lists(st.text(max_size=5), max_size=3),
    retries=st.integers(0, 4),
    color=st.none() | st.sampled_from(Color),
    priority=st.sampled_from(Priority),
    mode=st.sampled_from(["fast", "slow"]),
    weights=st.dictionaries(st.text(max_size=5), st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    pair=st.none() | st.tuples(st.integers(), st.text(max_size=5)),
    extra=st.none() | st.integers() | st.text(max_size=5),
)
_plans = st.builds(
    Plan,
    summary=st.text(max_size=20),
    steps=st.lists(_steps, max_size=3),
    action=_actions,
    tags=st.sets(st.text(max_size=5), max_size=3),
    confidence=st.floats(0.0, 1.0, exclude_min=True, allow_nan=False),
    done=st.booleans(),
    created=st.none() | st.dates(),
    note=st.none() | st.text(max_size=10),
)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats(-2, 2, allow_nan=False) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


@given(plan=_plans)
def test_valid_objects_have_no_errors_and_convert(plan: Plan) -> None:
    obj = msgspec.to_builtins(plan)
    assert collect_errors(obj, Plan) == []
    assert msgspec.convert(obj, Plan) == plan


def _locations(obj: object, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into `obj` (the root included)."""
    found = [path]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found += _locations(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            found += _locations(value, (*path, index))
    return found


def _mutate(obj: Any, path: tuple[Any, ...], op: str, new: object) -> Any:
    if not path:
        return new if op == "replace" else obj
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if op == "delete" and isinstance(parent, dict):
        del parent[last]
    elif op == "add" and isinstance(parent, dict):
        parent[f"zz_{last}"] = new
    else:
        parent[last] = new
    return obj


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(plan=_plans, data=st.data())
def test_walk_agrees_with_msgspec_on_mutated_objects(plan: Plan, data: st.DataObject) -> None:
    obj = msgspec.to_builtins(plan)
    path = data.draw(st.sampled_from(_locations(obj)))
    op = data.draw(st.sampled_from(["replace", "delete", "add"]))
    mutated = _mutate(obj, path, op, data.draw(_json_values))
    walked = schema_errors(mutated, Plan)
    assert (walked == []) == _convert_ok(mutated, Plan), walked
    assert (collect_errors(mutated, Plan) == []) == _convert_ok(mutated, Plan)
