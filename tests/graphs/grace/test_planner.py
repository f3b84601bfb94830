"""The embedded planner (seed 002 §8.1): keyword complexity, sub-questions, collection choice, always-valid plans."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.grace import SearchCollection
from graphs.config_files import load_grace_config
from graphs.grace.complexity import keyword_complexity, matched_categories
from graphs.grace.decompose import sub_questions
from graphs.grace.plan_rules import plan_errors
from graphs.grace.planner import choose_collection, heuristic_steps, plan_id_for, template_steps

CONFIG = load_grace_config(Path(__file__).resolve().parents[3] / "config", {})
DOCS = [SearchCollection(name="documents", description="default")]


@pytest.mark.parametrize(
    ("query", "complex_"),
    [
        ("東京タワーの高さは何メートルですか", False),
        ("What is the capital of France?", False),
        ("なぜ空は青いのか", False),
        ("東京タワーとスカイツリーの高さの違いは？", True),
        ("Compare Python and Go for web servers", True),
        ("光合成とは何ですか？呼吸との関係は？", True),
        ("電気自動車の長所と短所を分析し、普及の理由も説明して", True),
    ],
)
def test_keyword_complexity_separates_simple_from_complex(query: str, complex_: bool) -> None:
    score = keyword_complexity(query)
    assert 0.0 <= score <= 1.0
    assert (score >= CONFIG.planner.complexity_threshold) is complex_


def test_complexity_names_its_cue_categories() -> None:
    assert matched_categories("AとBの違いと、その理由") == ["comparison", "causal"]


@pytest.mark.parametrize(
    ("query", "parts"),
    [
        ("東京タワーとスカイツリーの高さの違いは？", ["東京タワーの高さ", "スカイツリーの高さ"]),
        ("Compare Python and Go for web servers", ["Python web servers", "Go web servers"]),
        ("What is the difference between TCP and UDP?", ["TCP", "UDP"]),
        ("光合成とは何ですか？呼吸との関係は？", ["光合成とは何ですか？", "呼吸との関係は？"]),
        ("なぜ空は青いのか", ["なぜ空は青いのか", "空 青 理由 原因"]),
        ("東京タワーの高さ", ["東京タワーの高さ"]),
    ],
)
def test_sub_questions(query: str, parts: list[str]) -> None:
    assert sub_questions(query, limit=4) == parts


def test_sub_questions_respect_the_limit() -> None:
    assert len(sub_questions("Aとは？Bとは？Cとは？Dとは？Eとは？", limit=3)) == 3


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("東京タワーの高さ", "landmarks"),
        ("カレーの作り方", "recipes"),
        ("量子力学", "recipes"),  # no overlap anywhere: the caller's first collection
    ],
)
def test_the_collection_is_chosen_by_its_description(query: str, expected: str) -> None:
    collections = [
        SearchCollection(name="recipes", description="料理 レシピ カレー 作り方"),
        SearchCollection(name="landmarks", description="東京の観光名所 タワー"),
    ]
    assert choose_collection(query, collections) == expected


queries = st.text(alphabet="東京タワーとスカイツリーの高さ違い比較？?なぜ理由 andcompareAB.", min_size=1, max_size=60)


@settings(max_examples=100)
@given(queries, st.integers(min_value=1, max_value=50))
def test_rule_based_plans_are_always_valid(query: str, first_id: int) -> None:
    if not query.strip():
        return
    names = {c.name for c in DOCS}
    for steps in (
        template_steps(query, DOCS, first_id=first_id),
        heuristic_steps(query, DOCS, max_searches=CONFIG.planner.max_searches, first_id=first_id),
    ):
        assert plan_errors(steps, collections=names, max_steps=CONFIG.planner.max_steps) == []
        assert steps[-1].action == "reasoning"
        assert steps[0].step_id == first_id


def test_plan_ids_are_deterministic_and_per_revision() -> None:
    assert plan_id_for("q", 0) == plan_id_for("q", 0)
    assert plan_id_for("q", 0) != plan_id_for("q", 1)
    assert plan_id_for("q", 0) != plan_id_for("r", 0)
