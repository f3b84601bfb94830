"""An answer's `[S n]` labels line up with its cited sources, whoever wrote it (`reasoning.Numbering`)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.grace import Evidence, UserInput
from graphs.grace.llm_reasoning import ModelAnswer, SelfEvaluation, grounded_answer

SHOWN: dict[str, Evidence | UserInput] = {
    **{
        f"S{n}": Evidence(step_id=1, document_id=f"doc-{n}", snippet=f"snippet {n}", score=1 - n / 10)
        for n in range(1, 6)
    },
    **{f"U{n}": UserInput(step_id=9, text=f"input {n}") for n in range(1, 3)},
}
LABELS = [*SHOWN, "S0", "S6", "S12", "U3"]
"""The labels shown, and some that name nothing shown (a model may write any)."""


def _reply(pieces: list[tuple[str, str]], citations: list[str]) -> ModelAnswer:
    text = "".join(f"{words}[{label}]" for words, label in pieces)
    return ModelAnswer(answer=text or "x", citations=citations, self_evaluation=SelfEvaluation(accuracy=0.9))


def test_the_probes_reply_is_renumbered_and_the_unlisted_label_cited() -> None:
    reply = ModelAnswer(
        answer="…333メートルである [S2]。港区にある [S3]。",
        citations=["S2"],
        self_evaluation=SelfEvaluation(accuracy=0.9),
    )
    answer = grounded_answer(reply, SHOWN)
    assert answer.text == "…333メートルである [S1]。港区にある [S2]。"
    assert answer.cited == [SHOWN["S2"], SHOWN["S3"]]


def test_a_listed_source_not_used_inline_comes_after_the_used_ones_and_unknown_labels_go() -> None:
    answer = grounded_answer(_reply([("a", "S9"), ("b", "S4"), ("c", "U2")], ["S1", "S4", "U1"]), SHOWN)
    assert answer.text == "ab[S1]c[U1]"
    assert answer.cited == [SHOWN["S4"], SHOWN["S1"]]
    assert answer.cited_inputs == [SHOWN["U2"], SHOWN["U1"]]


@settings(max_examples=200)
@given(
    pieces=st.lists(st.tuples(st.sampled_from(["", "東京。", "tower "]), st.sampled_from(LABELS)), max_size=12),
    citations=st.lists(st.sampled_from(list(SHOWN)), max_size=6),
)
def test_every_label_of_a_model_answer_names_its_source(pieces: list[tuple[str, str]], citations: list[str]) -> None:
    """`[S n]` is cited[n - 1], the one shown under the label the model wrote; numbered in order of first use."""
    answer = grounded_answer(_reply(pieces, citations), SHOWN)
    written = [label for _, label in pieces if label in SHOWN]
    used = re.findall(r"\[([SU][0-9]+)\]", answer.text)
    assert len(used) == len(written)  # every shown label kept, every other removed
    for original, renumbered in zip(written, used, strict=True):
        kind, n = renumbered[0], int(renumbered[1:])
        origins = answer.cited if kind == "S" else answer.cited_inputs
        assert origins[n - 1] == SHOWN[original]
    for kind, origins in (("S", answer.cited), ("U", answer.cited_inputs)):
        numbers = [int(label[1:]) for label in used if label[0] == kind]
        assert list(dict.fromkeys(numbers)) == list(range(1, len(set(numbers)) + 1))  # first use: 1, 2, 3, …
        assert len(origins) == len(set(map(id, origins)))
    expected = {id(SHOWN[label]) for label in written + citations}
    assert {id(o) for o in [*answer.cited, *answer.cited_inputs]} == expected  # nothing else
