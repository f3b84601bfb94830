"""The offline selection sweep: a grid point changes what the replayed selection keeps, and nothing else."""

from __future__ import annotations

import pytest

import graphs.librarian.selection as selection
from bench.librarian_selection_sweep import Recorded, parse_grid, replay, thresholds
from graphs.librarian.question import profile_question
from tests.graphs.librarian.test_selection import _assessment, _scored


def _loop(runner_up_share: float) -> Recorded:
    """A loop whose gold paragraph (page 1) is the runner-up at `runner_up_share` of the best."""
    ranked = [_scored(0, 1.0), _scored(1, runner_up_share)]
    return Recorded(
        gold=("tower", 1),
        profile=profile_question("東京タワー"),
        assessment=_assessment(ranked),
        history=[],
        found=False,
        snippets=1,
    )


def test_a_grid_point_replays_the_selection_under_its_thresholds_and_restores_them() -> None:
    before = selection.TIE_SHARE
    loops = [_loop(before - 0.02), _loop(0.5)]
    assert replay(loops) == (0, 1.0)
    with thresholds({"TIE_SHARE": before - 0.05}):
        # The near-tie now counts: the gold is found at the cost of one more snippet on that question.
        assert replay(loops) == (1, 1.5)
    assert before == selection.TIE_SHARE
    assert replay(loops) == (0, 1.0)


def test_an_error_loop_counts_against_recall_but_not_in_the_snippet_mean() -> None:
    failed = Recorded(
        gold=("tower", 1), profile=profile_question("東京タワー"), assessment=None, history=[], found=False, snippets=0
    )
    assert replay([_loop(0.99), failed]) == (1, 2.0)


def test_the_grid_takes_only_the_selections_thresholds() -> None:
    assert parse_grid(["TIE_SHARE=0.8,0.85", "SEARCH_VOTE=0"]) == {"TIE_SHARE": [0.8, 0.85], "SEARCH_VOTE": [0.0]}
    with pytest.raises(SystemExit):
        parse_grid(["MAX_EVIDENCE=3"])
    with pytest.raises(SystemExit):
        parse_grid(["TIE_SHARE="])
