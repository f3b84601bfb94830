"""The model's `reasoning` call (prompts/grace/reason.txt): an answer with citations and a self-evaluation.

The sources are labelled S1…Sn (best first, bounded in number and length whatever the session
gathered) and the user's inputs U1…Un; the model cites labels, never document ids, so it cannot name
a document that is not in the input. Labels it invents are re-asked once, then dropped and logged.
An unusable reply returns None and the caller uses the extractive answer.

The answer's labels are then renumbered as the embedded engine numbers its own (`reasoning.Numbering`,
order of first use), so `[S n]` in COMPLETE's answer is its n-th source: a label the model used inline
names the source shown under it (cited, listed or not), one naming nothing shown is removed, and a
source it listed without using inline comes after those it used.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.grace import Evidence, PlanStep, UserInput
from graphs.context import AgentContext
from graphs.grace.chat_model import grace_model
from graphs.grace.reasoning import Answer, Material, Numbering
from graphs.llm.ask import Prompt, ask_model
from graphs.llm.grounding import KnownIds

PROMPT_SOURCES = 12
"""Sources shown to the model, best score first (bounds the prompt)."""
SOURCE_CHARS = 700
"""Characters of each source shown."""
ACCURACY_WEIGHT = 0.7
"""Share of the self-evaluation that is accuracy (the rest is style): a wrong answer is worse than a terse one."""

Fraction = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class SelfEvaluation(msgspec.Struct, kw_only=True):
    """The model's judgement of its own answer (seed 002 §4.4 "LLM自己評価（Accuracy/Style）")."""

    accuracy: Fraction
    style: Fraction = 1.0


class ModelAnswer(msgspec.Struct, kw_only=True):
    """The reasoning reply."""

    answer: Annotated[str, msgspec.Meta(min_length=1, max_length=8_000)]
    citations: list[str] = msgspec.field(default_factory=list)
    self_evaluation: SelfEvaluation


def _shown(material: Material) -> list[Evidence]:
    order = sorted(range(len(material.evidence)), key=lambda i: (-(material.evidence[i].score or 0.0), i))
    return [material.evidence[i] for i in order[:PROMPT_SOURCES]]


def _render_sources(shown: list[Evidence]) -> str:
    lines = []
    for n, e in enumerate(shown, start=1):
        where = e.document_id + (f" (p.{e.page})" if e.page is not None else "")
        text = e.snippet[:SOURCE_CHARS].replace("</source>", "</ source>")
        lines.append(f"[S{n}] {where}\n<source>\n{text}\n</source>")
    return "\n".join(lines) or "(none)"


async def answer_with_llm(context: AgentContext, query: str, step: PlanStep, material: Material) -> Answer | None:
    """Ask the model for the step's answer; None when the reply was unusable after one re-ask."""
    shown = _shown(material)
    labels = {f"S{n}": e for n, e in enumerate(shown, start=1)}
    inputs = {f"U{n}": u for n, u in enumerate(material.user_inputs, start=1)}
    prompt = Prompt.named(
        "grace/reason.txt",
        context.prompts_dir,
        query=query,
        task=f"{step.description} {step.query}".strip(),
        context="\n".join(f"[step {sid}] {out[:500]}" for sid, out in material.context) or "(none)",
        user_inputs="\n".join(
            f"[{label}] <user_input>{u.text[:1000].replace('</user_input>', '</ user_input>')}</user_input>"
            for label, u in inputs.items()
        )
        or "(none)",
        sources=_render_sources(shown),
    )
    known = labels.keys() | inputs.keys()
    cited = KnownIds("citations", known, "one of the source labels shown")
    reply = (
        await ask_model(
            context,
            prompt,
            ModelAnswer,
            agent="grace.reasoning",
            ids=[cited],
            fallback="the extractive answer",
            model=grace_model(context),
        )
    ).value
    if reply is None:
        return None
    shown_labels: dict[str, Evidence | UserInput] = {**labels, **inputs}
    return grounded_answer(reply, shown_labels)


def grounded_answer(reply: ModelAnswer, shown: dict[str, Evidence | UserInput]) -> Answer:
    """The model's reply as an Answer whose `[S n]` labels name its n-th cited source (see the module docstring).

    `shown` maps each label of the prompt to what it showed; nothing else can be cited.
    """
    numbering = Numbering()
    text = numbering.relabel(reply.answer, shown)
    for label in reply.citations:  # listed, not used inline: cited too, numbered after the ones used
        if label in shown:
            numbering.label(shown[label])
    evaluation = reply.self_evaluation
    return Answer(
        text=text,
        cited=numbering.cited,
        cited_inputs=numbering.inputs,
        self_eval=round(ACCURACY_WEIGHT * evaluation.accuracy + (1 - ACCURACY_WEIGHT) * evaluation.style, 4),
        support=numbering.cited,
    )
