"""`plain_body_class()` sends exactly what the SDK's own `create` sends, and the transform it skips is a no-op."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import typing_extensions
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_openai.chat_models.base import BaseChatOpenAI
from openai._utils import PropertyInfo, async_maybe_transform
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import completion_create_params

from graphs.llm.config import LLMConfig
from graphs.llm.openai_body import given, plain_body_class
from graphs.llm.structured_output import ainvoke_structured, bind_native_json
from tests.fakes.fixtures import (  # noqa: F401 - fixtures, until tests/conftest.py imports them
    ChatModelFactory,
    chat_model_factory_fixture,
    fake_llm_fixture,
    fake_openai_config,
    llm_server_fixture,
)
from tests.fakes.llm_server import FakeLLMServer, Reply


class Plan(msgspec.Struct, kw_only=True):
    steps: list[str]
    done: bool = False


CONVERSATIONS: list[list[BaseMessage]] = [
    [HumanMessage("東京タワーの高さは? [c1] <snippet>\n333 m\n</snippet>")],
    [SystemMessage("answer in JSON"), HumanMessage("plan"), AIMessage('{"steps": [1]}'), HumanMessage("- $.steps[0]")],
    [HumanMessage("")],
]
CONFIGS = [
    pytest.param({"provider": "openai"}, id="openai-json-schema"),
    pytest.param({"provider": "openai-compatible"}, id="compatible-json-schema"),
    pytest.param({"provider": "openai-compatible", "json_object_only": True}, id="compatible-json-object"),
    pytest.param({"provider": "openai", "native_json_schema": False}, id="no-native-json"),
]


def _openai(model: object) -> BaseChatOpenAI:
    assert isinstance(model, BaseChatOpenAI)
    return model


def _walk(tp: Any, seen: set[int]) -> Iterator[Any]:
    """Every annotation reachable from `tp` (TypedDict fields, union members, type arguments, metadata)."""
    if id(tp) in seen:
        return
    seen.add(id(tp))
    yield tp
    if typing_extensions.is_typeddict(tp):
        for hint in typing_extensions.get_type_hints(tp, include_extras=True).values():
            yield from _walk(hint, seen)
    for arg in typing.get_args(tp):
        yield from _walk(arg, seen)
    yield from getattr(tp, "__metadata__", ())


@pytest.mark.parametrize("stream", [False, True])
def test_chat_parameters_declare_no_alias_or_format(stream: bool) -> None:
    """What the skipped transform does is rename aliased keys and format dates/files: none is declared.

    An SDK upgrade that adds one fails here, before any body goes out unrenamed.
    """
    params = (
        completion_create_params.CompletionCreateParamsStreaming
        if stream
        else completion_create_params.CompletionCreateParamsNonStreaming
    )
    reached = list(_walk(params, set()))
    assert len(reached) > 50  # the walk really enters the message and tool types
    infos = [item for item in reached if isinstance(item, PropertyInfo)]
    assert [(info.alias, info.format) for info in infos if info.alias or info.format] == []


@pytest.mark.parametrize("overrides", CONFIGS)
@pytest.mark.parametrize("messages", CONVERSATIONS)
async def test_the_transform_returns_our_bodies_unchanged(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    overrides: dict[str, Any],
    messages: list[BaseMessage],
) -> None:
    cfg = fake_openai_config(llm_server, **overrides)
    model = _openai(chat_model_factory(cfg))
    bound: Any = bind_native_json(model, Plan, cfg)
    payload = model._get_request_payload(messages, **getattr(bound, "kwargs", {}))
    params = {k: v for k, v in payload.items() if k not in ("extra_body", "extra_headers", "extra_query", "timeout")}
    expected = await async_maybe_transform(params, completion_create_params.CompletionCreateParamsNonStreaming)
    assert given(params) == expected


@pytest.mark.parametrize("overrides", CONFIGS)
async def test_the_wire_body_is_the_sdks(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, overrides: dict[str, Any]
) -> None:
    """The same call through the SDK's `create` and through ours: byte-for-byte the same JSON on the wire."""
    cfg: LLMConfig = fake_openai_config(llm_server, **overrides)
    model = _openai(chat_model_factory(cfg))
    assert isinstance(model.async_client, plain_body_class())  # what `make_chat_model` builds
    ours = model.async_client
    sdk = AsyncCompletions(model.root_async_client)
    replies = []
    for completions in (sdk, ours):
        model.async_client = completions
        llm_server.script(Reply(content='{"steps": ["a"]}'))
        replies.append(await ainvoke_structured(model, CONVERSATIONS[1], Plan, cfg=cfg))
    model.async_client = ours
    sdk_body, our_body = llm_server.chat_requests
    assert our_body == sdk_body
    assert "response_format" in our_body or not cfg.native_json_schema
    assert replies[0] == replies[1]
    assert replies[1].value == Plan(steps=["a"])


async def test_streaming_calls_take_the_sdks_own_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    model = _openai(chat_model_factory(fake_openai_config(llm_server)))
    llm_server.script(Reply(content="streamed"))
    chunks = [chunk async for chunk in model.astream([HumanMessage("hi")])]
    assert "".join(str(chunk.content) for chunk in chunks) == "streamed"
    (body,) = llm_server.chat_requests
    assert body["stream"] is True
