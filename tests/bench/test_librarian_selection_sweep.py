"""The offline selection sweep: a grid point changes what the replayed selection keeps, and nothing else."""

from __future__ import annotations

import numpy as np
import pytest

import graphs.librarian.selection as selection
from bench.librarian_selection_sweep import (
    Recorded,
    answer_rows,
    fit_answer_model,
    fit_report,
    log_loss,
    parse_grid,
    replay,
    thresholds,
)
from graphs.librarian.question import profile_question
from tests.graphs.librarian.test_selection import _assessment, _scored


def _loop(runner_up_share: float, gold_page: int = 1) -> Recorded:
    """A loop whose gold paragraph (page `gold_page`) is the best or the runner-up at `runner_up_share` of it."""
    ranked = [_scored(0, 1.0), _scored(1, runner_up_share)]
    return Recorded(
        gold=("tower", gold_page),
        profile=profile_question("東京タワー"),
        assessment=_assessment(ranked),
        history=[],
        found=False,
        snippets=1,
    )


def test_a_grid_point_replays_the_selection_under_its_thresholds_and_restores_them() -> None:
    before = selection.ANSWER_PROBABILITY
    loops = [_loop(0.7), _loop(0.5)]
    assert replay(loops) == (0, 1.0)
    with thresholds({"ANSWER_PROBABILITY": 0.01}):
        # The runner-up at 0.7 now counts as a likely answer: the gold is found for one more snippet there.
        assert replay(loops) == (1, 1.5)
    assert before == selection.ANSWER_PROBABILITY
    assert replay(loops) == (0, 1.0)


def test_an_error_loop_counts_against_recall_but_not_in_the_snippet_mean() -> None:
    failed = Recorded(
        gold=("tower", 1), profile=profile_question("東京タワー"), assessment=None, history=[], found=False, snippets=0
    )
    assert replay([_loop(0.99), failed]) == (1, 2.0)


def test_the_grid_takes_only_the_selections_thresholds() -> None:
    assert parse_grid(["ANSWER_PROBABILITY=0.03,0.04", "SEARCH_VOTE=0"]) == {
        "ANSWER_PROBABILITY": [0.03, 0.04],
        "SEARCH_VOTE": [0.0],
    }
    with pytest.raises(SystemExit):
        parse_grid(["MAX_EVIDENCE=3"])
    with pytest.raises(SystemExit):
        parse_grid(["ANSWER_PROBABILITY="])


def test_the_answer_model_fit_learns_which_candidates_are_gold_and_lowers_the_log_loss() -> None:
    # The runner-up is the gold when it is nearly as relevant as the best, never when it is far behind: the fit
    # rates a close runner-up likelier than a distant one.
    loops = [_loop(share, gold_page=0 if share < 0.9 else 1) for share in (0.5, 0.6, 0.7, 0.95)] * 5
    rows = answer_rows(loops)
    features, gold = rows
    assert features.shape == (40, len(selection.ANSWER_MODEL) + 1)
    assert gold.sum() == 20
    fitted = fit_answer_model(rows)
    probability = 1 / (1 + np.exp(-(features @ fitted)))
    assert probability[7] > 0.5 > probability[1]  # the runner-ups at 0.95 and at 0.5 of the best
    assert log_loss(rows, fitted) < log_loss(rows, np.zeros_like(fitted))
    report = fit_report({"dev": loops[:8], "dev2": loops[8:]})
    assert set(report) == {"current", "dev", "dev2", "all"}
    assert all(set(fit["log_loss"]) == {"dev", "dev2"} for fit in report.values())
