"""Plan validation (issue 5): unique ids, `depends_on` naming existing earlier steps, no cycles, known actions.

Property tests hold `plan_errors` to an independent oracle and `normalize_steps` / `renumber` to the
invariants the executor relies on.
"""

from __future__ import annotations

import itertools
from typing import get_args

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.grace import PlanStep, StepAction
from graphs.grace.plan_rules import find_cycle, normalize_steps, plan_errors, renumber

COLLECTIONS = {"wiki", "docs"}
MAX_STEPS = 8

actions: st.SearchStrategy[StepAction] = st.sampled_from(get_args(StepAction))
fallbacks: st.SearchStrategy[StepAction | None] = st.none() | actions


@st.composite
def any_plan(draw: st.DrawFn) -> list[PlanStep]:
    """Arbitrary plans: duplicate ids, dangling and forward dependencies, cycles, missing fields all possible."""
    ids = draw(st.lists(st.integers(min_value=1, max_value=12), min_size=0, max_size=10))
    steps = []
    for step_id in ids:
        action = draw(actions)
        steps.append(
            PlanStep(
                step_id=step_id,
                action=action,
                description=draw(st.sampled_from(["", "ask this", "\u200b", " \u3000"])),
                query=draw(st.sampled_from(["", "東京タワー", "\u200b\ufeff", "\t \n"])),
                collection=draw(st.sampled_from([None, "wiki", "nowhere"])),
                depends_on=draw(st.lists(st.integers(min_value=1, max_value=12), max_size=3)),
                fallback=draw(fallbacks),
            )
        )
    return steps


def visible(text: str) -> bool:
    """Whether some character shows (the drawn texts are printable words, whitespace and format characters)."""
    return any(ch.isprintable() and not ch.isspace() for ch in text)


def oracle(steps: list[PlanStep]) -> bool:
    """Validity written out directly from the rules, without plan_rules' helpers."""
    if not 1 <= len(steps) <= MAX_STEPS:
        return False
    ids = [s.step_id for s in steps]
    if len(set(ids)) != len(ids):
        return False
    position = {s.step_id: i for i, s in enumerate(steps)}
    for i, s in enumerate(steps):
        if any(d not in position or position[d] >= i for d in s.depends_on):
            return False
        if s.action == "rag_search" and not visible(s.query):
            return False
        if s.collection is not None and s.collection not in COLLECTIONS:  # on any step
            return False
        if s.action == "ask_user" and not (visible(s.description) or visible(s.query)):
            return False
        if s.fallback == s.action and s.action != "rag_search":
            return False
    return True


@settings(max_examples=100)
@given(any_plan())
def test_plan_errors_agree_with_the_rules(steps: list[PlanStep]) -> None:
    errors = plan_errors(steps, collections=COLLECTIONS, max_steps=MAX_STEPS)
    assert (errors == []) == oracle(steps)
    assert all(e.path.startswith("$.steps") for e in errors)


@st.composite
def dag(draw: st.DrawFn) -> list[PlanStep]:
    """A valid DAG of steps (each depends only on earlier ones), then listed in a shuffled order."""
    count = draw(st.integers(min_value=1, max_value=MAX_STEPS))
    ids = draw(st.lists(st.integers(min_value=1, max_value=1000), min_size=count, max_size=count, unique=True))
    steps = [
        PlanStep(
            step_id=step_id,
            action="reasoning",
            query="q",
            depends_on=draw(st.lists(st.sampled_from(ids[:i]), max_size=3)) if i else [],
        )
        for i, step_id in enumerate(ids)
    ]
    return draw(st.permutations(steps))


@settings(max_examples=100)
@given(dag())
def test_normalizing_a_dag_orders_it_topologically_and_keeps_every_step(steps: list[PlanStep]) -> None:
    ordered = normalize_steps(steps)
    position = {s.step_id: i for i, s in enumerate(ordered)}
    assert sorted(position) == sorted(s.step_id for s in steps)
    assert all(position[d] < position[s.step_id] for s in ordered for d in s.depends_on)
    assert all(len(s.depends_on) == len(set(s.depends_on)) for s in ordered)
    assert normalize_steps(ordered) == ordered  # idempotent
    assert plan_errors(ordered, collections=COLLECTIONS, max_steps=MAX_STEPS) == []
    assert find_cycle(ordered) == []


@settings(max_examples=100)
@given(dag(), st.data())
def test_a_back_edge_is_reported_as_a_cycle(steps: list[PlanStep], data: st.DataObject) -> None:
    ordered = normalize_steps(steps)
    with_deps = [s for s in ordered if s.depends_on]
    if not with_deps:
        return
    late = data.draw(st.sampled_from(with_deps))
    early = next(s for s in ordered if s.step_id == late.depends_on[0])
    cyclic = [
        msgspec.structs.replace(s, depends_on=[*s.depends_on, late.step_id]) if s is early else s for s in ordered
    ]
    cycle = find_cycle(cyclic)
    edges = {(s.step_id, d) for s in cyclic for d in s.depends_on}
    assert cycle[0] == cycle[-1]
    assert all((a, b) in edges for a, b in itertools.pairwise(cycle))
    messages = [e.message for e in plan_errors(cyclic, collections=COLLECTIONS, max_steps=MAX_STEPS)]
    assert any("cycle" in m for m in messages)
    assert normalize_steps(cyclic) == [  # a cycle cannot be ordered: left as it was (deduplicated)
        msgspec.structs.replace(s, depends_on=list(dict.fromkeys(s.depends_on))) for s in cyclic
    ]


@settings(max_examples=100)
@given(dag(), st.integers(min_value=1, max_value=500))
def test_renumbering_keeps_the_structure(steps: list[PlanStep], start: int) -> None:
    ordered = normalize_steps(steps)
    renumbered = renumber(ordered, start)
    assert [s.step_id for s in renumbered] == list(range(start, start + len(ordered)))
    mapping = {a.step_id: b.step_id for a, b in zip(ordered, renumbered, strict=True)}
    for old, new in zip(ordered, renumbered, strict=True):
        assert new.depends_on == [mapping[d] for d in old.depends_on]
    assert plan_errors(renumbered, collections=COLLECTIONS, max_steps=MAX_STEPS) == []


def test_renumbering_leaves_dependencies_on_kept_steps_alone() -> None:
    new = [
        PlanStep(step_id=1, action="reasoning", depends_on=[40]),
        PlanStep(step_id=2, action="reasoning", depends_on=[1]),
    ]
    assert [(s.step_id, s.depends_on) for s in renumber(new, 50)] == [(50, [40]), (51, [50])]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        pytest.param([], "at least one step", id="empty"),
        pytest.param([PlanStep(step_id=1, action="reasoning", depends_on=[1])], "itself", id="self"),
        pytest.param(
            [PlanStep(step_id=1, action="reasoning", depends_on=[2]), PlanStep(step_id=2, action="reasoning")],
            "comes later",
            id="forward",
        ),
        pytest.param([PlanStep(step_id=1, action="reasoning", depends_on=[9])], "does not exist", id="dangling"),
        pytest.param([PlanStep(step_id=1, action="ask_user")], "needs the question", id="question-without-text"),
        pytest.param(
            [PlanStep(step_id=1, action="reasoning", fallback="reasoning")], "must differ", id="fallback-to-itself"
        ),
    ],
)
def test_each_rule_names_its_problem(steps: list[PlanStep], message: str) -> None:
    errors = plan_errors(steps, collections=COLLECTIONS, max_steps=MAX_STEPS)
    assert any(message in e.message for e in errors), errors
