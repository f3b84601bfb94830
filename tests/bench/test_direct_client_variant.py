"""The concurrency bench's contrast client (not the service's) sends the body the SDK sends and reads its reply."""

from __future__ import annotations

import json

import msgspec
import pytest
from langchain_core.messages import HumanMessage

from bench.direct_client_variant import DirectChat, DirectHTTPError, direct_chat_model
from graphs.llm.providers import aclose_chat_model, make_chat_model
from graphs.llm.retry import classify
from graphs.llm.structured_output import native_json_kwargs
from tests.fakes.fixtures import fake_openai_config, llm_server_fixture  # noqa: F401 - fixture
from tests.fakes.llm_server import FakeLLMServer, Reply

pytestmark = pytest.mark.llm


class _Decision(msgspec.Struct):
    ok: bool


async def test_a_reply_its_usage_and_the_request_body(llm_server: FakeLLMServer) -> None:
    model = DirectChat(
        base_url=llm_server.url, model_name="m", temperature=0.0, max_tokens=64, extra_body={"max_tokens": 64}
    )
    llm_server.script(Reply(content='{"ok": true}', usage=(3, 4)))
    try:
        bound = model.bind(extra_body={"response_format": {"type": "json_object"}})
        reply = await bound.ainvoke([HumanMessage("hello")])
    finally:
        await model.aclose()
    assert json.loads(str(reply.content)) == {"ok": True}
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (3, 4)
    (body,) = llm_server.chat_requests
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert (body["max_completion_tokens"], body["max_tokens"]) == (64, 64)
    assert body["response_format"] == {"type": "json_object"}


async def test_an_error_status_is_what_the_retry_loop_classifies(llm_server: FakeLLMServer) -> None:
    model = DirectChat(base_url=llm_server.url, model_name="m")
    llm_server.script(Reply(status=429), Reply(status=400))
    try:
        with pytest.raises(DirectHTTPError) as busy:
            await model.ainvoke([HumanMessage("hi")])
        with pytest.raises(DirectHTTPError) as refused:
            await model.ainvoke([HumanMessage("hi")])
    finally:
        await model.aclose()
    assert classify(busy.value).retryable
    assert not classify(refused.value).retryable


async def test_the_same_request_body_as_the_sdk_for_an_openai_compatible_model(llm_server: FakeLLMServer) -> None:
    config = fake_openai_config(llm_server, provider="openai-compatible", max_output_tokens=64)
    sdk_model, direct = make_chat_model(config), direct_chat_model(config)
    assert sdk_model is not None
    llm_server.script(Reply(content="{}"), Reply(content="{}"))
    try:
        for model in (sdk_model, direct):
            await model.ainvoke([HumanMessage("hello")], **native_json_kwargs(model, _Decision, config))
    finally:
        await aclose_chat_model(sdk_model)
        await direct.aclose()
    by_sdk, by_direct = llm_server.chat_requests
    assert by_direct == by_sdk
