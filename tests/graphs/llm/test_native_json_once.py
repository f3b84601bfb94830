"""The schema sent with every structured call is built once per reply type, and is the type's full schema."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from graphs.librarian.llm_step import LLMDecision
from graphs.llm.config import LLMConfig, LLMProviderName
from graphs.llm.providers import make_chat_model
from graphs.llm.structured_output import inline_json_schema, native_json_kwargs


class Note(msgspec.Struct):
    text: str


def _bound_kwargs(provider: LLMProviderName, schema: Any) -> dict[str, Any]:
    base_url = None if provider == "gemini" else "http://127.0.0.1:9/v1"
    model = make_chat_model(LLMConfig(provider=provider, model="m", api_key="k", base_url=base_url))
    assert model is not None
    return native_json_kwargs(model, schema, LLMConfig(provider=provider, model="m"))


@pytest.mark.parametrize("provider", ["openai", "openai-compatible"])
def test_openai_response_format_is_built_once_per_type(provider: LLMProviderName) -> None:
    first = _bound_kwargs(provider, LLMDecision)["extra_body"]["response_format"]
    second = _bound_kwargs(provider, LLMDecision)["extra_body"]["response_format"]
    assert first["json_schema"] is second["json_schema"]  # one document per type, not one per call
    assert first == {
        "type": "json_schema",
        "json_schema": {"name": "LLMDecision", "schema": inline_json_schema(LLMDecision), "strict": False},
    }
    other = _bound_kwargs(provider, Note)["extra_body"]["response_format"]
    assert other["json_schema"]["schema"] == inline_json_schema(Note)


def test_gemini_schema_is_built_once_per_type() -> None:
    first = _bound_kwargs("gemini", LLMDecision)["response_json_schema"]
    assert first is _bound_kwargs("gemini", LLMDecision)["response_json_schema"]
    assert first == inline_json_schema(LLMDecision)
