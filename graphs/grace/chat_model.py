"""The chat model GRACE calls: the service's, at GRACE's own temperature (config/grace_config.yml `llm.temperature`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphs.context import AgentContext

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def grace_model(context: AgentContext) -> BaseChatModel:
    """`context.llm`, copied with GRACE's temperature when it differs from the service-wide `LLM_TEMPERATURE`.

    The copy is shallow (pydantic `model_copy`), so it shares the original's HTTP clients and their
    connection pools; closing the original at shutdown closes them for both.
    """
    model = context.llm
    assert model is not None
    wanted = context.grace.llm.temperature
    if getattr(model, "temperature", wanted) == wanted:
        return model
    copied: BaseChatModel = model.model_copy(update={"temperature": wanted})
    return copied
