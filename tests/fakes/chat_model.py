"""A scripted in-process chat model for unit tests of what code does with a model's reply.

Where the provider client and HTTP add nothing (re-ask rules, grounding, echo checks, a node's use of
the answer), `ScriptedChatModel` answers from a script without a socket or a server thread. Tests of
the real clients (langchain-openai, langchain-google-genai) use the loopback HTTP fake instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from graphs.context import AgentContext
from graphs.llm.config import LLMConfig
from tests.support.context import make_context

SCRIPTED_CONFIG = LLMConfig(provider="openai-compatible", model="scripted", native_json_schema=False, max_retries=0)
"""The config a scripted context reports (`usage.model == "scripted"`); no native JSON parameters to bind."""


class ScriptedChatModel(GenericFakeChatModel):
    """`GenericFakeChatModel` that also records every prompt it was sent, in order."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def prompt_text(self, index: int) -> str:
        """The text of every message of the `index`-th prompt, joined by newlines."""
        return "\n".join(message.text for message in self.prompts[index])


class Scripted(NamedTuple):
    """A request context whose model answers from the script, and that model (to read its prompts)."""

    context: AgentContext
    model: ScriptedChatModel


ScriptedFactory = Callable[..., Scripted]


def scripted(*replies: str | AIMessage, timeout_s: float = 10.0) -> Scripted:
    """A fresh request context (service defaults) whose model answers `replies` in order, then fails."""
    model = ScriptedChatModel(messages=iter(replies))
    context = make_context(llm=model, llm_config=SCRIPTED_CONFIG).for_request(timeout_s=timeout_s)
    return Scripted(context, model)
