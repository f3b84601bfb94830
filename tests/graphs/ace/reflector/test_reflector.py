"""The Reflector: seed 001 properties 3–4, template lookup, and the embedded engine's judgement."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from unittest import mock

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.ace import Bullet, Insight, Trajectory
from graphs.ace.reflector import heuristic
from graphs.ace.reflector.heuristic import (
    derive_insights,
    evaluate_bullets,
    judge,
    reflect_by_rules,
    report_verdict,
)
from graphs.ace.reflector.llm import extract_insights
from graphs.ace.reflector.prompt import BUILTIN_TEMPLATE, ReflectorPromptBuilder
from graphs.prompt_files import PROMPTS_DIR
from graphs.text import contradiction, tokenize
from tests.graphs.ace.helpers import bullet
from tests.graphs.ace.strategies import TEXT_CHARS, bullet_ids, insights

non_empty = st.text(TEXT_CHARS, min_size=1, max_size=200).filter(str.strip)


# Feature: reflector-agent, Property 3: the prompt contains the answer, the ground truth, the report and every bullet
@settings(max_examples=100)
@given(
    answer=non_empty,
    truth=non_empty,
    report=non_empty,
    bullets=st.lists(st.builds(Bullet, id=bullet_ids, section=st.just("s"), content=non_empty), min_size=1, max_size=8),
    steps=st.lists(non_empty, max_size=4),
)
def test_prompt_contains_everything_it_is_built_from(
    answer: str, truth: str, report: str, bullets: list[Bullet], steps: list[str]
) -> None:
    # Distinct markers, so that a short value cannot be "found" in the template's own text.
    answer, truth, report = f"⟦answer⟧{answer}", f"⟦truth⟧{truth}", f"⟦report⟧{report}"
    bullets = [msgspec.structs.replace(b, content=f"⟦bullet {i}⟧{b.content}") for i, b in enumerate(bullets)]
    steps = [f"⟦step {i}⟧{step}" for i, step in enumerate(steps)]
    trajectory = Trajectory(query="q", generated_answer=answer, reasoning_steps=steps)
    prompt = ReflectorPromptBuilder(PROMPTS_DIR).prompt(trajectory, truth, report, bullets, "default").render()
    for part in (answer, truth, report, *steps, *(b.content for b in bullets)):
        assert part in prompt


# Feature: reflector-agent, Property 4: insights serialised to JSON parse back equal
@settings(max_examples=100)
@given(items=st.lists(insights, max_size=5), wrapped=st.booleans())
def test_extract_insights_parses_what_was_serialised(items: list[Insight], wrapped: bool) -> None:
    payload = {"insights": items} if wrapped else items
    assert extract_insights(msgspec.json.encode(payload).decode()) == items


@pytest.mark.parametrize(
    "reply",
    ["not json at all", '{"insights": [{"reasoning": 1}]}', '{"insights": "none"}', "", "[1, 2]"],
)
def test_unusable_replies_give_no_insights(reply: str) -> None:
    assert extract_insights(reply) == []


def test_fenced_and_chatty_replies_still_parse() -> None:
    item = dict.fromkeys(
        ("reasoning", "error_identification", "root_cause_analysis", "correct_approach", "key_insight"), "x"
    )
    reply = "Here is my analysis:\n```json\n" + msgspec.json.encode({"insights": [item]}).decode() + "\n```"
    assert extract_insights(reply) == [Insight(**item)]


def test_default_template_is_the_seed_format_with_every_variable() -> None:
    text = (PROMPTS_DIR / "reflector" / "default.txt").read_text(encoding="utf-8")
    for variable in (
        "generated_answer",
        "ground_truth",
        "test_report",
        "reasoning_steps",
        "used_bullets",
        "previous_insights",
    ):
        assert "{" + variable + "}" in text
    prompt = ReflectorPromptBuilder(PROMPTS_DIR).prompt(Trajectory(query="q"), "", "", [], "default").render()
    assert "Reflector" in prompt
    assert not prompt.startswith("#")  # the variable header is stripped
    assert '"bullet_evaluations"' in prompt


def test_dataset_template_then_default_then_builtin(tmp_path: Path) -> None:
    trajectory = Trajectory(query="q", generated_answer="ANSWER")
    builder = ReflectorPromptBuilder(tmp_path)
    assert builder.prompt(trajectory, "", "", [], "mine").render().startswith(BUILTIN_TEMPLATE.split("\n", 1)[0][:40])
    (tmp_path / "reflector").mkdir()
    (tmp_path / "reflector" / "default.txt").write_text("# {x}: doc\n\nDEFAULT {generated_answer}", encoding="utf-8")
    assert builder.prompt(trajectory, "", "", [], "mine").render() == "DEFAULT ANSWER"
    (tmp_path / "reflector" / "mine.txt").write_text("MINE {generated_answer} {previous_insights}", encoding="utf-8")
    previous = [
        Insight(reasoning="r", error_identification="e", root_cause_analysis="c", correct_approach="a", key_insight="k")
    ]
    assert builder.prompt(trajectory, "", "", [], "mine", previous).render().startswith('MINE ANSWER [{"reasoning":"r"')
    assert builder.prompt(trajectory, "", "", [], "other").render() == "DEFAULT ANSWER"


def test_a_broken_override_falls_back(tmp_path: Path) -> None:
    (tmp_path / "reflector").mkdir()
    (tmp_path / "reflector" / "bad.txt").write_text("{no_such_variable}", encoding="utf-8")
    (tmp_path / "reflector" / "default.txt").write_text("OK {ground_truth}", encoding="utf-8")
    assert ReflectorPromptBuilder(tmp_path).prompt(Trajectory(query="q"), "GT", "", [], "bad").render() == "OK GT"


@pytest.mark.parametrize(
    ("report", "outcome"),
    [
        ("5 passed, 0 failed", "success"),
        ("FAILED test_x - AssertionError: 2 != 3", "failure"),
        ("Traceback (most recent call last):", "failure"),
        ("テストに失敗しました", "failure"),
        ("全テスト成功", "success"),
        ("no errors", "unknown"),
        ("", "unknown"),
    ],
)
def test_test_reports_are_read(report: str, outcome: str) -> None:
    assert report_verdict(report)[0] == outcome


TOWER = bullet("gen-00001", "東京タワーの高さは300メートルである。")
UNRELATED = bullet("gen-00002", "Use show_venmo_balance before approving a payment request.")
CORRECT = bullet("gen-00003", "東京タワーの高さは333メートルである。")


def test_a_wrong_figure_marks_the_bullet_that_gave_it_harmful() -> None:
    trajectory = Trajectory(
        query="東京タワーの高さは？",
        generated_answer="東京タワーの高さは300メートルである。",
        used_bullet_ids=["gen-00001", "gen-00002"],
    )
    verdict = judge(trajectory, "333メートル", "")
    assert verdict.outcome == "failure"
    assert "333" in verdict.missing
    evaluations = evaluate_bullets(trajectory, "333メートル", verdict, [TOWER, UNRELATED])
    assert [(e.bullet_id, e.tag) for e in evaluations] == [("gen-00001", "harmful"), ("gen-00002", "neutral")]
    assert "300" in evaluations[0].reason
    (insight,) = derive_insights(trajectory, "333メートル", verdict, [TOWER, UNRELATED], evaluations)
    assert "333メートル" in insight.key_insight
    assert "300" in insight.key_insight
    assert "gen-00001" in insight.root_cause_analysis


def test_success_marks_applied_bullets_helpful_and_needs_no_lesson() -> None:
    trajectory = Trajectory(
        query="東京タワーの高さは？", generated_answer="東京タワーの高さは333メートル。", used_bullet_ids=["gen-00003"]
    )
    verdict = judge(trajectory, "333メートル", "1 passed")
    assert verdict.outcome == "success"
    evaluations = evaluate_bullets(trajectory, "333メートル", verdict, [CORRECT, UNRELATED])
    assert [e.tag for e in evaluations] == ["helpful", "neutral"]
    assert derive_insights(trajectory, "333メートル", verdict, [CORRECT], evaluations) == []


def test_a_success_without_bullets_is_worth_a_lesson() -> None:
    trajectory = Trajectory(
        query="How do I list every song?", generated_answer="loop over page_index", reasoning_steps=["paginate"]
    )
    verdict = judge(trajectory, "", "all tests passed")
    (insight,) = derive_insights(trajectory, "", verdict, [], [])
    assert insight.key_insight == "To list every song, this approach works: paginate"  # the topic, not the question


def test_the_test_report_overrides_the_ground_truth() -> None:
    trajectory = Trajectory(query="q", generated_answer="333")
    assert judge(trajectory, "333", "FAILED: timeout").outcome == "failure"
    assert judge(trajectory, "444", "ok, all passed").outcome == "success"


def test_nothing_to_judge_by_is_neutral_and_silent() -> None:
    trajectory = Trajectory(query="q", generated_answer="a", used_bullet_ids=["gen-00001"])
    verdict = judge(trajectory, "", "")
    assert verdict.outcome == "unknown"
    assert [e.tag for e in evaluate_bullets(trajectory, "", verdict, [TOWER])] == ["neutral"]
    assert derive_insights(trajectory, "", verdict, [TOWER], []) == []


def test_a_failure_known_only_from_the_report_blames_applied_bullets() -> None:
    trajectory = Trajectory(
        query="pay the request", generated_answer="approve it with show_venmo_balance first payment"
    )
    verdict = judge(trajectory, "", "FAILED test_payment: insufficient funds")
    evaluations = evaluate_bullets(trajectory, "", verdict, [UNRELATED, TOWER])
    assert [e.tag for e in evaluations] == ["harmful", "neutral"]
    (insight,) = derive_insights(trajectory, "", verdict, [UNRELATED, TOWER], evaluations)
    assert "FAILED test_payment" in insight.key_insight


def test_cited_bullet_ids_are_not_figures_of_the_answer() -> None:
    trajectory = Trajectory(
        query="東京タワーの高さは？", generated_answer="- 東京タワーの高さは300メートル。 [gen-00001]"
    )
    verdict = judge(trajectory, "333メートル", "")
    assert verdict.wrong_figures == [("300メートル", "333メートル")]  # 00001 of the cited id is not a figure


def test_the_rules_read_the_answer_and_the_ground_truth_once_for_every_bullet() -> None:
    """One reflection tokenises and parses each text once, however many bullets it judges, and decides as the
    three steps called one by one do."""
    trajectory = Trajectory(
        query="東京タワーの高さは？",
        generated_answer="東京タワーの高さは300メートルである。 [gen-00001]",
        used_bullet_ids=["gen-00001", "gen-00002", "gen-00003"],
    )
    used = [TOWER, UNRELATED, CORRECT]
    tokenised: Counter[str] = Counter()
    parsed: Counter[str] = Counter()

    def counted_tokens(text: str) -> set[str]:
        tokenised[text] += 1
        return tokenize.content_tokens(text)

    def counted_figures(text: str) -> list[contradiction.Figure]:
        parsed[text] += 1
        return contradiction.figures(text)

    with (
        mock.patch.object(heuristic, "content_tokens", counted_tokens),
        mock.patch.object(heuristic, "figures", counted_figures),
    ):
        evaluations, insights = reflect_by_rules(trajectory, "333メートル", "", used, with_insights=True)
    assert max(tokenised.values()) == 1, tokenised
    assert max(parsed.values()) == 1, parsed
    verdict = judge(trajectory, "333メートル", "")
    assert evaluations == evaluate_bullets(trajectory, "333メートル", verdict, used)
    assert insights == derive_insights(trajectory, "333メートル", verdict, used, evaluations)
    assert reflect_by_rules(trajectory, "333メートル", "", used, with_insights=False) == (evaluations, [])


def test_figures_are_paired_only_as_far_as_they_are_listed() -> None:
    """2,500 numbers a side were every pair (6 million, 2 GB, 11 s over HTTP); the reflector lists eight."""
    calls: list[int | None] = []
    real = contradiction.figure_conflicts

    def spy(*args: object, limit: int | None = None, **kwargs: object) -> object:
        calls.append(limit)
        return real(*args, limit=limit, **kwargs)  # type: ignore[arg-type]

    answer = " ".join(str(i) for i in range(1, 2_501))
    truth = " ".join(str(i) for i in range(2_501, 5_001))
    used = [bullet("gen-00001", f"The answer is {answer[:200]}")]
    trajectory = Trajectory(query="q", generated_answer=answer, used_bullet_ids=["gen-00001"])
    with mock.patch.object(heuristic, "figure_conflicts", spy):
        verdict = judge(trajectory, truth, "")
        evaluate_bullets(trajectory, truth, verdict, used)
    assert calls
    assert all(limit is not None and limit <= heuristic.BLAMED_PAIRS for limit in calls)
    assert len(verdict.wrong_figures) == heuristic.MAX_LISTED_TERMS
