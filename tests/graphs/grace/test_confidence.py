"""Confidence (seed 002 §8.3): thresholds, normalisation, weights and penalties, table-driven."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import pytest

from contracts.grace import ConfidenceFactors, StepAction, Thresholds
from graphs.config_files import GraceConfig, load_grace_config
from graphs.grace.confidence import (
    ScoredText,
    decide,
    exact_pvariance,
    measure,
    normalize_factors,
    score_step,
    source_agreement,
)
from graphs.llm.config import ConfigError

CONFIG_DIR = Path(__file__).resolve().parents[3] / "config"
CONFIG = load_grace_config(CONFIG_DIR, {})
DEFAULT = Thresholds(silent=0.9, notify=0.7, confirm=0.4)


@pytest.mark.parametrize(
    ("score", "decision"),
    [
        (1.0, "SILENT"),
        (0.9, "SILENT"),
        (0.8999, "NOTIFY"),
        (0.7, "NOTIFY"),
        (0.6999, "CONFIRM"),
        (0.4, "CONFIRM"),
        (0.3999, "ESCALATE"),
        (0.0, "ESCALATE"),
    ],
)
def test_default_thresholds_map_scores_to_the_four_decisions(score: float, decision: str) -> None:
    assert decide(score, DEFAULT) == decision


@pytest.mark.parametrize(
    ("env", "score", "decision"),
    [
        ({"GRACE_THRESHOLDS__SILENT": "0.95"}, 0.92, "NOTIFY"),
        ({"GRACE_THRESHOLDS__CONFIRM": "0.5"}, 0.45, "ESCALATE"),
        ({"GRACE_THRESHOLDS__NOTIFY": "0.6"}, 0.65, "NOTIFY"),
        ({}, 0.92, "SILENT"),
    ],
)
def test_thresholds_come_from_the_config_file_and_grace_env_overrides(
    env: dict[str, str], score: float, decision: str
) -> None:
    config = load_grace_config(CONFIG_DIR, env)
    t = config.thresholds
    assert decide(score, Thresholds(silent=t.silent, notify=t.notify, confirm=t.confirm)) == decision


def _source(doc: str, text: str, score: float | None) -> ScoredText:
    return ScoredText(document_id=doc, text=text, score=score)


def test_factors_are_measured_from_the_sources() -> None:
    factors = measure([_source("a", "東京タワー 333", 0.9), _source("b", "東京タワー 333", 0.7)], self_eval=0.8)
    assert factors.hit_count == 2
    assert factors.max_score == 0.9
    assert factors.mean_score == pytest.approx(0.8)
    assert factors.score_variance == pytest.approx(0.01)
    assert factors.source_agreement == 1.0
    assert factors.llm_self_eval == 0.8


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        pytest.param([], 0.0, id="none"),
        pytest.param([_source("a", "東京タワー", 0.9)], 0.5, id="one-document"),
        pytest.param([_source("a", "東京タワー", 0.9), _source("a", "大阪城", 0.8)], 0.5, id="one-document-twice"),
        pytest.param([_source("a", "東京タワー 高さ", 0.9), _source("b", "東京タワー 高さ", 0.8)], 1.0, id="agree"),
        pytest.param([_source("a", "東京タワー", 0.9), _source("b", "富士山", 0.8)], 0.0, id="disagree"),
    ],
)
def test_source_agreement(sources: list[ScoredText], expected: float) -> None:
    assert source_agreement(sources) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("factors", "normalized"),
    [
        pytest.param(
            ConfidenceFactors(hit_count=6, max_score=0.9, mean_score=0.8, score_variance=0.0, source_agreement=0.5),
            {"hit_count": 1.0, "max_score": 0.9, "mean_score": 0.8, "score_variance": 1.0, "source_agreement": 0.5},
            id="capped-hit-count",
        ),
        pytest.param(
            ConfidenceFactors(hit_count=1, max_score=0.5, mean_score=0.5, score_variance=0.25, source_agreement=0.5),
            {"hit_count": 1 / 3, "max_score": 0.5, "mean_score": 0.5, "score_variance": 0.0, "source_agreement": 0.5},
            id="max-variance",
        ),
        pytest.param(
            ConfidenceFactors(hit_count=2, source_agreement=0.4, llm_self_eval=0.7),
            {"hit_count": 2 / 3, "source_agreement": 0.4, "llm_self_eval": 0.7},
            id="unscored-hits-leave-score-factors-out",
        ),
        pytest.param(ConfidenceFactors(), {"hit_count": 0.0, "source_agreement": 0.0}, id="nothing"),
    ],
)
def test_normalization(factors: ConfidenceFactors, normalized: dict[str, float]) -> None:
    assert normalize_factors(factors, target_hits=3) == pytest.approx(normalized, abs=1e-6)


GOOD = ConfidenceFactors(hit_count=3, max_score=0.9, mean_score=0.8, score_variance=0.01, source_agreement=0.6)


@pytest.mark.parametrize(
    ("step_type", "factors", "tool_failed", "penalties", "multiplier"),
    [
        pytest.param("rag_search", GOOD, False, [], 1.0, id="clean-search"),
        pytest.param("rag_search", GOOD, True, ["tool_failure"], 0.6, id="partial-failure"),
        pytest.param("rag_search", ConfidenceFactors(), False, ["zero_hits"], 0.5, id="zero-hits"),
        pytest.param("rag_search", ConfidenceFactors(), True, ["tool_failure", "zero_hits"], 0.3, id="failed"),
        pytest.param(
            "reasoning",
            ConfidenceFactors(llm_self_eval=0.9),
            False,
            ["zero_hits"],
            0.5,
            id="answer-without-sources",
        ),
    ],
)
def test_penalties_multiply_the_weighted_score(
    step_type: StepAction, factors: ConfidenceFactors, tool_failed: bool, penalties: list[str], multiplier: float
) -> None:
    clean = score_step(factors, step_type, CONFIG, DEFAULT)
    scored = score_step(factors, step_type, CONFIG, DEFAULT, tool_failed=tool_failed)
    assert [p.name for p in scored.penalties] == penalties
    base = sum(scored.weights[k] * scored.normalized[k] for k in scored.weights)
    assert scored.score == pytest.approx(round(base * multiplier, 4), abs=1e-4)
    assert scored.score <= clean.score or not tool_failed


def test_penalty_multipliers_come_from_the_config() -> None:
    config = load_grace_config(CONFIG_DIR, {"GRACE_PENALTIES__TOOL_FAILURE": "0.25"})
    scored = score_step(GOOD, "rag_search", config, DEFAULT, tool_failed=True)
    clean = score_step(GOOD, "rag_search", config, DEFAULT)
    assert scored.score == pytest.approx(clean.score * 0.25, abs=1e-4)


def test_search_and_reasoning_weigh_different_factors() -> None:
    factors = ConfidenceFactors(
        hit_count=1, max_score=0.5, mean_score=0.5, score_variance=0.0, source_agreement=0.5, llm_self_eval=1.0
    )
    search = score_step(factors, "rag_search", CONFIG, DEFAULT)
    reasoning = score_step(factors, "reasoning", CONFIG, DEFAULT)
    assert "llm_self_eval" not in search.weights  # weight 0 for searches
    assert reasoning.weights["llm_self_eval"] == pytest.approx(0.4)
    assert reasoning.score > search.score  # the self-evaluation lifts the answer, not the search


def test_weights_are_renormalised_over_the_measurable_factors() -> None:
    scored = score_step(ConfidenceFactors(hit_count=3, source_agreement=1.0), "rag_search", CONFIG, DEFAULT)
    assert set(scored.weights) == {"hit_count", "source_agreement"}
    assert sum(scored.weights.values()) == pytest.approx(1.0)
    assert scored.score == pytest.approx(1.0)


def test_the_score_reports_its_breakdown() -> None:
    scored = score_step(GOOD, "rag_search", CONFIG, DEFAULT)
    assert scored.factors == GOOD
    assert scored.step_type == "rag_search"
    assert scored.decision == decide(scored.score, DEFAULT)
    assert 0.0 <= scored.score <= 1.0


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"GRACE_CONFIDENCE_WEIGHTS__ASK_USER__HIT_COUNT": "1"}, "not a step type"),
        ({"GRACE_CONFIDENCE_WEIGHTS__RAG_SEARCH__VIBES": "1"}, "unknown factor"),
        ({"GRACE_CONFIDENCE_WEIGHTS__REASONING__HIT_COUNT": "-1"}, "weights must be >= 0"),
        ({"GRACE_PENALTIES__ZERO_HITS": "1.5"}, "zero_hits"),
        ({"GRACE_FEEDBACK__STEP": "0.5"}, "feedback"),
        ({"GRACE_PLANNER__MAX_STEPS": "99"}, "max_steps"),
    ],
)
def test_bad_grace_configuration_stops_the_start(env: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        load_grace_config(CONFIG_DIR, env)


def test_weights_are_normalised_at_load_time() -> None:
    config = load_grace_config(CONFIG_DIR, {"GRACE_CONFIDENCE_WEIGHTS__RAG_SEARCH__HIT_COUNT": "2.2"})
    weights = config.weights_for("rag_search")
    assert sum(weights.values()) == pytest.approx(1.0)
    assert weights["hit_count"] == pytest.approx(2.2 / 3.0)


def test_the_built_in_defaults_match_the_shipped_file() -> None:
    assert GraceConfig().weights_for("reasoning") == pytest.approx(CONFIG.weights_for("reasoning"))


def _score_lists(count: int) -> list[list[float]]:
    """Edge cases, then seeded random lists: scores as callers round them, raw floats, tiny and large magnitudes."""
    rng = random.Random(20261123)
    lists = [[0.5], [1.0, 0.0], [0.1, 0.2, 0.3], [0.95, 0.93, 0.92], [5e-324, 1.0], [0.3] * 7, [1e-300, 1.0]]
    for i in range(count):
        size = rng.randint(1, 50)
        if i % 3 == 0:
            lists.append([round(rng.random(), rng.randint(0, 6)) for _ in range(size)])
        elif i % 3 == 1:
            lists.append([rng.random() for _ in range(size)])
        else:
            lists.append([rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 100) for _ in range(size)])
    return lists


def test_exact_pvariance_is_statistics_pvariance_to_the_last_bit() -> None:
    """The variance factor is the same float `statistics.pvariance` gives, so every score stays as it was."""
    for scores in _score_lists(3000):
        assert exact_pvariance(scores) == statistics.pvariance(scores), scores
