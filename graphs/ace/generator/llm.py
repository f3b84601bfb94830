"""The model's generator: one structured call that answers from the retrieved bullets and names the ones it used.

Only retrieved bullets are shown (top_k, best first), so the prompt is bounded whatever the playbook size.
Ids the model names that were not shown are re-asked once, then dropped and logged (grounding). An
unusable reply gives None and the caller falls back to the extractive answer.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.ace import Trajectory
from graphs.ace.generator.heuristic import GeneratedAnswer
from graphs.ace.prompts import dataset_prompt
from graphs.ace.search.hybrid import Hit
from graphs.context import AgentContext
from graphs.llm.ask import Prompt, ask_model
from graphs.llm.grounding import KnownIds

MAX_PROMPT_HITS = 50
"""Retrieved bullets shown to the model (top_k may be up to 200); the prompt stays bounded."""
MAX_BULLET_CHARS = 2_000
MAX_ANSWER_CHARS = 100_000
MAX_STEPS = 200
MAX_STEP_CHARS = 20_000
"""The Trajectory contract's limits: a reply is cut to them so the trajectory can be sent back to /reflect."""


class GeneratorReply(msgspec.Struct, kw_only=True):
    """What the generator prompt asks the model for."""

    answer: Annotated[str, msgspec.Meta(min_length=1)]
    reasoning_steps: list[str] = msgspec.field(default_factory=list)
    used_bullet_ids: list[str] = msgspec.field(default_factory=list)


def render_hits(hits: list[Hit]) -> str:
    """One `[id] (section) content` line per retrieved bullet."""
    lines = [f"[{h.bullet.id}] ({h.bullet.section}) {h.bullet.content[:MAX_BULLET_CHARS]}" for h in hits]
    return "\n".join(lines) or "(no bullet matched)"


async def generate_with_llm(context: AgentContext, query: str, dataset: str, hits: list[Hit]) -> GeneratedAnswer | None:
    """Ask the model once (plus one re-ask for unusable output); None when the extractive answer must do.

    Raises:
        ModelFailure: The provider failed.
        ModelTimeout: The model did not answer within the deadline.
    """
    hits = hits[:MAX_PROMPT_HITS]
    prompt = Prompt(
        dataset_prompt("generator", dataset, context.prompts_dir),
        {"query": query, "dataset": dataset, "bullets": render_hits(hits)},
    )
    shown = KnownIds("used_bullet_ids", {h.bullet.id for h in hits}, "one of the listed bullet ids")
    answer = await ask_model(
        context, prompt, GeneratorReply, agent="ace.generator", ids=[shown], fallback="the extractive answer"
    )
    reply = answer.value
    if reply is None:
        return None
    trajectory = Trajectory(
        query=query,
        dataset=dataset,
        generated_answer=reply.answer[:MAX_ANSWER_CHARS],
        reasoning_steps=[step[:MAX_STEP_CHARS] for step in reply.reasoning_steps[:MAX_STEPS]],
        used_bullet_ids=list(dict.fromkeys(reply.used_bullet_ids)),
    )
    return GeneratedAnswer(answer=trajectory.generated_answer, trajectory=trajectory)
