"""The one way an agent asks its model for a typed answer: `ask_model`.

Every agent's model call is the same exchange: render a prompt file, ask for a schema-shaped JSON
reply (`ainvoke_structured`: extract, decode, validate, re-ask naming every problem), check it is
grounded, and either use it or let the embedded rules answer. This module is that exchange, once:

- the checks before a re-ask are the shared ones plus the caller's own: ids the input did not hold
  (`KnownIds`), strings that copy the prompt's placeholders or instructions (`echo_problems`,
  derived from the prompt template itself), and the caller's `check`;
- after the last reply, items naming invented ids are dropped (and logged); any other problem left
  makes the reply unusable (value None, with the reasons), never half-used;
- every request and reply is added to the request's usage meter as it happens, so a failure still
  reports what it spent; when the caller names a `fallback`, an unusable reply is recorded (and
  logged) as the embedded rules standing in, which is what `usage.engine` then reports.

Provider failures are not caught here: `ModelFailure` / `ModelTimeout` go to the caller (the
request becomes MODEL_FAILURE / TIMEOUT, or the agent falls back, as GRACE's planner does), with
`attempts` set to the requests this exchange made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import msgspec
from langchain_core.messages import HumanMessage

from contracts.common import Usage
from graphs.context import AgentContext
from graphs.llm.echo import echo_problems
from graphs.llm.errors import ModelFailure, ModelTimeout
from graphs.llm.grounding import KnownIds, drop_invented, unknown_id_problems
from graphs.llm.structured_output import ainvoke_structured
from graphs.prompt_files import load_prompt

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

T = TypeVar("T", bound=msgspec.Struct)


@dataclass(frozen=True)
class Prompt:
    """A prompt template (as its file holds it, header stripped) and the values of its variables.

    The unfilled template is kept because it is what a reply must not copy: its example values
    and instructions, not the request's own data that fills the variables.
    """

    template: str
    variables: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def named(cls, name: str, prompts_dir: Path, /, **variables: object) -> Prompt:
        """`prompts/<name>.txt` under `prompts_dir`, with `variables`.

        Raises:
            FileNotFoundError: No such prompt.
        """
        return cls(load_prompt(name, prompts_dir), variables)

    def render(self) -> str:
        """The text sent to the model (`str.format`; values are never parsed as templates).

        Raises:
            KeyError: The template names a variable that was not given.
        """
        return self.template.format(**self.variables)


@dataclass(frozen=True)
class AskResult(Generic[T]):
    """What one `ask_model` exchange produced.

    Attributes:
        value: The reply, grounded (invented ids dropped); None when it was unusable after the re-asks.
        usage: What this exchange cost (every request and reply; also added to the request's meter).
        reasons: Why the last reply was unusable; empty when `value` is set.
        attempts: Replies requested (1 + re-asks used).
    """

    value: T | None
    usage: Usage
    reasons: list[str]
    attempts: int


async def ask_model(
    context: AgentContext,
    prompt: Prompt,
    schema: type[T],
    *,
    agent: str,
    ids: Sequence[KnownIds] = (),
    check: Callable[[T], list[str]] | None = None,
    fallback: str | None = None,
    model: BaseChatModel | None = None,
    deadline: float | None = None,
    max_reasks: int = 1,
) -> AskResult[T]:
    """Ask the context's model for a `schema` reply to `prompt`; the grounded value, or None and why.

    Args:
        context: The request's context: model, provider settings, deadline, usage meter.
        prompt: The prompt template and its variables.
        schema: The msgspec Struct the reply must decode to.
        agent: Who is asking (`librarian`, `ace.generator`, ...), for logs and `fallback_reason`.
        ids: Where the reply names ids and which exist; invented ones are re-asked, then dropped.
        check: The caller's own problems with a schema-valid reply (re-asked; if they persist the
            reply is unusable).
        fallback: What the caller uses instead of an unusable reply (e.g. "the extractive answer");
            when given, an unusable reply is recorded as a fallback to the embedded rules. Leave it
            None when the caller decides later whether the rules stand in.
        model: A variant of the context's model (GRACE's own temperature); default `context.llm`.
        deadline: An earlier end than the request's (the reflector keeps a reserve); default the
            context's deadline.
        max_reasks: Extra attempts after a reply with problems.

    Raises:
        ModelFailure: The provider failed (after transport retries), `attempts` set.
        ModelTimeout: The model did not answer in time, `attempts` set.
    """
    chat = model or context.llm
    assert chat is not None, "the heuristic engine never asks a model"
    template = prompt.template

    def problems(reply: T) -> list[str]:
        return unknown_id_problems(reply, ids) + echo_problems(reply, template) + (check(reply) if check else [])

    calls_before = context.meter.calls
    try:
        result = await ainvoke_structured(
            chat,
            [HumanMessage(prompt.render())],
            schema,
            cfg=context.llm_config,
            deadline=context.deadline if deadline is None else deadline,
            max_reasks=max_reasks,
            check=problems,
            meter=context.meter,
        )
    except ModelFailure as exc:
        exc.attempts = context.meter.calls - calls_before
        raise
    value, reasons = result.value, list(result.errors)
    if value is not None and reasons:
        value = drop_invented(value, ids, agent=agent)
        reasons = echo_problems(value, template) + (check(value) if check else [])
        if reasons:
            value = None
    if value is None and fallback is not None:
        context.meter.fell_back(
            agent=agent, reason=f"unusable model output, {fallback} used: {reasons[0]}", attempts=result.attempts
        )
    return AskResult(value=value, usage=result.usage, reasons=reasons, attempts=result.attempts)


def failure_reason(exc: ModelFailure) -> str:
    """How a provider failure reads in a fallback reason: `model timeout: …` or `model failure: …`."""
    return f"{'model timeout' if isinstance(exc, ModelTimeout) else 'model failure'}: {exc.reason}"
