"""Replanning (seed 002 §8.5): strategy choice, FALLBACK / PARTIAL / FULL merges, fresh ids, always-valid plans."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.grace import (
    GraceState,
    PlanStep,
    ReplanTrigger,
    SearchCollection,
    StepAction,
    StepResult,
    StepStatus,
    Thresholds,
)
from graphs.config_files import load_grace_config
from graphs.grace.plan_rules import plan_errors
from graphs.grace.planner import build_plan
from graphs.grace.replan import Trigger, _finalize, choose_strategy, replan, trigger_for
from tests.support.context import make_context

ROOT = Path(__file__).resolve().parents[3]
CONFIG = load_grace_config(ROOT / "config", {})
CONTEXT = make_context(grace=CONFIG)
TWO = [SearchCollection(name="wiki", description="百科事典"), SearchCollection(name="web", description="ウェブ")]
QUERY = "東京タワーとスカイツリーの高さの違いは？"


def search(
    step_id: int, query: str = "東京タワーの高さ", collection: str = "wiki", fallback: StepAction | None = None
) -> PlanStep:
    return PlanStep(step_id=step_id, action="rag_search", query=query, collection=collection, fallback=fallback)


def session(steps: list[PlanStep], results: list[StepResult], collections: list[SearchCollection] = TWO) -> GraceState:
    return GraceState(
        query=QUERY,
        collections=collections,
        plan=build_plan(QUERY, steps, complexity=0.5),
        results=results,
        thresholds=Thresholds(silent=0.9, notify=0.7, confirm=0.4),
        max_step_id=max(s.step_id for s in steps),
    )


def ok(step_id: int, action: StepAction = "rag_search") -> StepResult:
    return StepResult(step_id=step_id, action=action, status="success", output="out")


PLAN = [
    search(1),
    search(2, "スカイツリーの高さ", fallback="rag_search"),
    PlanStep(step_id=3, action="reasoning", query=QUERY, depends_on=[1, 2]),
]


@pytest.mark.parametrize(
    ("trigger", "collections", "strategy"),
    [
        (Trigger("STEP_FAILURE", PLAN[1]), ["wiki", "web"], "FALLBACK"),
        (Trigger("STEP_FAILURE", PLAN[1]), ["wiki"], "PARTIAL"),  # no other collection to fall back to
        (Trigger("STEP_FAILURE", PLAN[0]), ["wiki", "web"], "PARTIAL"),  # no fallback named
        (Trigger("STEP_FAILURE", search(9, fallback="ask_user")), ["wiki"], "FALLBACK"),
        (Trigger("LOW_CONFIDENCE", PLAN[1]), ["wiki", "web"], "FALLBACK"),
        (Trigger("LOW_CONFIDENCE", search(9, fallback="ask_user")), ["wiki"], "PARTIAL"),
        (Trigger("USER_MODIFY", PLAN[1], user_input="もっと詳しく"), ["wiki"], "FULL"),
        (Trigger("USER_MODIFY", PLAN[1]), ["wiki"], "PARTIAL"),
        (Trigger("USER_MODIFY", None), ["wiki"], "FULL"),
    ],
)
def test_strategy_choice(trigger: Trigger, collections: list[str], strategy: str) -> None:
    assert choose_strategy(trigger, collections) == strategy


@pytest.mark.parametrize(
    ("result", "replans_left", "kind"),
    [
        (StepResult(step_id=1, action="rag_search", status="failed", error="down"), 0, "STEP_FAILURE"),
        (StepResult(step_id=1, action="rag_search", status="failed", error="down"), 2, "STEP_FAILURE"),
        (ok(1), 2, None),
    ],
)
def test_trigger_for_a_result(result: StepResult, replans_left: int, kind: str | None) -> None:
    trigger = trigger_for(result, PLAN[0], replans_left=replans_left)
    assert (trigger.kind if trigger else None) == kind


async def test_fallback_replaces_the_step_in_place_and_rewires_its_dependents() -> None:
    state = session(PLAN, [ok(1), StepResult(step_id=2, action="rag_search", status="failed", error="down")])
    done = await replan(CONTEXT, state, Trigger("STEP_FAILURE", PLAN[1], reason="down"))
    assert done.strategy == "FALLBACK"
    steps = done.plan.steps
    assert [s.step_id for s in steps] == [1, 4, 3]
    assert steps[1].collection == "web"
    assert steps[1].query == "スカイツリーの高さ"
    assert steps[2].depends_on == [1, 4]
    assert done.plan.revision == 1


async def test_fallback_to_the_user_asks_about_the_failed_search() -> None:
    one = [SearchCollection(name="wiki")]
    plan = [search(1, fallback="ask_user"), PlanStep(step_id=2, action="reasoning", query=QUERY, depends_on=[1])]
    state = session(plan, [StepResult(step_id=1, action="rag_search", status="failed", error="timeout")], one)
    done = await replan(CONTEXT, state, Trigger("STEP_FAILURE", plan[0], reason="timeout"))
    question = done.plan.steps[0]
    assert question.action == "ask_user"
    assert "timeout" in question.description
    assert done.plan.steps[1].depends_on == [question.step_id]


async def test_partial_keeps_completed_steps_and_regenerates_the_rest_with_fresh_ids() -> None:
    state = session(PLAN, [ok(1), ok(2)])
    done = await replan(CONTEXT, state, Trigger("LOW_CONFIDENCE", PLAN[0]))  # no fallback on step 1
    steps = done.plan.steps
    assert done.strategy == "PARTIAL"
    assert steps[0].step_id == 2  # completed and not the trigger: kept as it was
    assert [s.step_id for s in steps[1:]] == [4, 5]
    assert steps[1].query == "東京 タワー 高"  # the retried search: key terms only
    assert sorted(steps[2].depends_on) == [2, 4]


async def test_full_plans_again_with_the_users_words() -> None:
    state = session(PLAN, [ok(1)])
    done = await replan(CONTEXT, state, Trigger("USER_MODIFY", PLAN[1], user_input="展望台の高さも"))
    assert done.strategy == "FULL"
    assert all(s.step_id > 3 for s in done.plan.steps)
    assert any("展望台" in s.query for s in done.plan.steps)


statuses = st.sampled_from(["success", "failed", "skipped", None])


@settings(max_examples=100)
@given(
    st.lists(statuses, min_size=3, max_size=3),
    st.sampled_from([0, 1, 2]),
    st.sampled_from(["STEP_FAILURE", "LOW_CONFIDENCE", "USER_MODIFY"]),
    st.sampled_from([None, "もっと詳しく"]),
    st.booleans(),
)
async def test_every_replan_is_a_valid_plan_with_fresh_ids(
    outcome: list[StepStatus | None], index: int, kind: ReplanTrigger, text: str | None, one_collection: bool
) -> None:
    collections = TWO[:1] if one_collection else TWO
    plan = [
        search(1, collection=collections[0].name, fallback="rag_search"),
        search(2, "スカイツリー", collection=collections[0].name, fallback="ask_user"),
        PlanStep(step_id=3, action="reasoning", query=QUERY, depends_on=[1, 2]),
    ]
    results = [
        StepResult(step_id=i + 1, action=plan[i].action, status=status)
        for i, status in enumerate(outcome)
        if status is not None
    ]
    state = session(plan, results, collections)
    done = await replan(CONTEXT, state, Trigger(kind, plan[index], user_input=text))
    names = {c.name for c in collections}
    assert plan_errors(done.plan.steps, collections=names, max_steps=CONFIG.planner.max_steps) == []
    old = {s.step_id for s in plan}
    kept = [s for s in done.plan.steps if s.step_id in old]
    assert all(s.step_id > 3 for s in done.plan.steps if s.step_id not in old)
    status = {r.step_id: r.status for r in results}
    trigger_id = plan[index].step_id
    if done.strategy == "FULL":
        assert not kept
    elif done.strategy == "PARTIAL":
        assert all(status.get(s.step_id) == "success" and s.step_id != trigger_id for s in kept)
    else:
        assert trigger_id not in {s.step_id for s in done.plan.steps}
    assert done.plan.revision == 1


def test_a_merged_plan_that_fails_gives_the_template_after_the_completed_steps() -> None:
    """Not the template alone: the completed steps and their results stay, and the answer draws on them too."""
    state = session(PLAN, [ok(1), ok(2)])
    broken = [*PLAN[:2], PlanStep(step_id=4, action="reasoning", query=QUERY, depends_on=[99])]  # dangling
    replanned = _finalize(CONTEXT, state, broken, [1, 2], "PARTIAL")
    steps = replanned.plan.steps
    assert [s.step_id for s in steps[:2]] == [1, 2]
    assert [s.action for s in steps[2:]] == ["rag_search", "reasoning"]
    assert steps[-1].depends_on == [1, 2, steps[2].step_id]
    assert steps[2].step_id > state.max_step_id
    assert replanned.strategy == "PARTIAL"


def test_with_nothing_completed_a_failing_merged_plan_is_a_full_replan_and_says_so() -> None:
    state = session(PLAN, [])
    broken = [PlanStep(step_id=4, action="reasoning", query=QUERY, depends_on=[99])]
    replanned = _finalize(CONTEXT, state, broken, [], "PARTIAL")
    assert [s.action for s in replanned.plan.steps] == ["rag_search", "reasoning"]
    assert replanned.strategy == "FULL"
