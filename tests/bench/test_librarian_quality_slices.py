"""The quality bench's slices: fixed, disjoint, and the final one never read question by question."""

from __future__ import annotations

import asyncio
import random

import pytest

from bench.librarian_quality import DEV2_SAMPLE, DEV_SAMPLE, Question, choose, evaluate, slices


def _questions(n: int = 4442) -> list[Question]:
    return [(str(i), f"question {i}", (f"doc{i // 4}", i % 4)) for i in range(n)]


def test_slices_partition_the_questions_deterministically() -> None:
    questions = _questions()
    first, again = slices(questions), slices(list(questions))
    assert first == again
    ids = {name: [q[0] for q in chosen] for name, chosen in first.items()}
    assert (len(ids["dev"]), len(ids["dev2"]), len(ids["final"])) == (DEV_SAMPLE, DEV2_SAMPLE, 4442 - 2100)
    assert not set(ids["dev"]) & set(ids["dev2"])
    assert not set(ids["final"]) & (set(ids["dev"]) | set(ids["dev2"]))
    assert set(ids["dev"]) | set(ids["dev2"]) | set(ids["final"]) == {q[0] for q in questions}
    assert set(ids["held-out"]) == set(ids["dev2"]) | set(ids["final"])


def test_dev_is_the_former_seeded_tuning_sample() -> None:
    questions = _questions()
    assert slices(questions)["dev"] == random.Random(7).sample(questions, 600)
    assert choose(questions, sample=600, seed=7, offset=0, slice_=None) == slices(questions)["dev"]


def test_sample_caps_a_slice() -> None:
    questions = _questions()
    assert choose(questions, sample=10, seed=0, offset=0, slice_="final") == slices(questions)["final"][:10]


@pytest.mark.parametrize("slice_", ["final", "held-out"])
def test_misses_are_refused_on_untouched_questions(slice_: str) -> None:
    with pytest.raises(SystemExit, match="never inspected"):
        asyncio.run(evaluate(1, 7, False, 5, 0, [], None, slice_, []))
